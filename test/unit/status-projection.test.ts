import t from 'tap'
import type { StatusEvent } from '../../contracts/status-events.js'
import { newCommandDocument, type CommandDocument } from '../../api/commands/command-document.js'
import { outputFileDocument, outputFileId, outputFileMeta } from '../../api/files/output-files.js'
import { endingEvent, foldEvents, processingUpdate, terminalUpdate } from '../../api/projector/projection.js'
import { seededRandom } from '../harness/random.js'

const created = new Date('2026-01-01T00:00:00Z')
const now = new Date('2026-01-01T00:00:02.5Z')
const base = newCommandDocument(
  { command_type: 'FFMPEG_COMMAND', input_files: {}, output_files: { out_x: 'x.mp4' }, ffmpeg_commands: ['ffmpeg'], metadata: null, webhook_url: null, storage_destination_id: null, ytdlp: null, original_request: { input_files: {}, output_files: {} } } as never,
  { commandId: 'c1', accountId: 'acc_1' },
  created,
)
const doc = (patch: Partial<CommandDocument>): CommandDocument => ({ ...base, ...patch })
const envelope = { command_id: 'c1', event_id: 'e', emitted_at: now.toISOString() }
const processing = (progress: number | null, stage: 'RUNNING' | 'FETCHING' = 'RUNNING') => ({ ...envelope, type: 'PROCESSING', stage, progress }) as StatusEvent & { type: 'PROCESSING' }
const failed = { ...envelope, type: 'FAILED', error_status: 'FFMPEG_FAILED', error_message: 'bad', ffmpeg_command_run_seconds: 0.5, failed_files: null } as StatusEvent & { type: 'FAILED' }

t.test('a PROCESSING event moves QUEUED forward and progress only grows', async (t) => {
  t.match(processingUpdate(doc({}), processing(null, 'FETCHING'), now), { status: 'PROCESSING', progress: null, processing_stage: 'FETCHING', started_at: now })
  t.match(processingUpdate(doc({ status: 'PROCESSING', progress: 40, processing_stage: 'RUNNING' }), processing(60), now), { progress: 60 })
  t.match(processingUpdate(doc({ status: 'PROCESSING', progress: 40, processing_stage: 'PROCESSING' }), processing(20), now), { progress: 40 }, 'a late lower percent keeps 40')
  t.equal(processingUpdate(doc({ status: 'PROCESSING', progress: 40, processing_stage: 'RUNNING' }), processing(20), now), null, 'nothing to write')
})

t.test('nothing moves a terminal command', async (t) => {
  for (const status of ['SUCCESS', 'FAILED'] as const) {
    t.equal(processingUpdate(doc({ status }), processing(50), now), null)
    t.equal(terminalUpdate(doc({ status }), failed, {}, now), null)
  }
})

t.test('a FAILED event sets the error fields and the total time from submission', async (t) => {
  t.match(terminalUpdate(doc({ status: 'PROCESSING' }), failed, {}, now), {
    status: 'FAILED', error_status: 'FFMPEG_FAILED', error_message: 'bad', total_processing_seconds: 2.5, ffmpeg_command_run_seconds: 0.5, output_results: null,
  })
})

t.test('a SUCCESS event records each output as an OUTPUT file with a stable id', async (t) => {
  const result = {
    filename: 'x.mp4', storage_location: 'INTERNAL' as const, bucket: 'b', object_key: 'outputs/c1/x.mp4', size_mbytes: 1, duration: 2, file_type: 'video' as const,
    file_format: 'mp4', codec: 'h264', pixel_format: 'yuv420p', mime_type: 'video/mp4', width: 320, height: 180, frame_rate: 25, bitrate_video_kb: 100, bitrate_audio_kb: 64, sample_rate: 48000, channels: 2,
  }
  const file = outputFileDocument(doc({}), 'out_x', result, 'https://signed', now)
  t.equal(file._id, outputFileId('c1', 'out_x'))
  t.equal(outputFileId('c1', 'out_x'), outputFileId('c1', 'out_x'), 'a replay derives the same id')
  t.not(outputFileId('c1', 'out_x'), outputFileId('c2', 'out_x'))
  t.match(file, { service_store_type: 'OUTPUT', status: 'STORED', command_id: 'c1', output_alias: 'out_x', object_key: 'outputs/c1/x.mp4', storage_url: 'https://signed' })
  const success = { ...envelope, type: 'SUCCESS', output_files: { out_x: result }, ffmpeg_command_run_seconds: 1, failed_files: {} } as StatusEvent & { type: 'SUCCESS' }
  const update = terminalUpdate(doc({ status: 'PROCESSING' }), success, { out_x: outputFileMeta(file) }, now)
  t.match(update, { status: 'SUCCESS', progress: 100, failed_files: null, output_results: { out_x: { file_id: file._id, storage_url: 'https://signed', width: 320, is_deleted: false } } })
})

const stages = ['FETCHING', 'RUNNING', 'PROBING', 'UPLOADING'] as const
const stage = (name: (typeof stages)[number], progress: number | null) => ({ ...envelope, type: 'PROCESSING', stage: name, progress }) as StatusEvent & { type: 'PROCESSING' }
const succeeded = { ...envelope, type: 'SUCCESS', output_files: {}, ffmpeg_command_run_seconds: 1, failed_files: null } as StatusEvent & { type: 'SUCCESS' }

/** The record after one read and one write per event: how the projector applied events before it folded them. */
function oneWriteEach(start: CommandDocument, events: StatusEvent[]): CommandDocument {
  let current = start
  for (const event of events) {
    const update = event.type === 'PROCESSING' ? processingUpdate(current, event, now) : terminalUpdate(current, event, {}, now)
    if (update) current = { ...current, ...update }
  }
  return current
}

t.test('folding a run of events into one write leaves the record as one write per event would', async (t) => {
  for (let seed = 1; seed <= 300; seed++) {
    const next = seededRandom(seed)
    const events: StatusEvent[] = Array.from({ length: 1 + Math.floor(next() * 10) }, () => {
      const roll = next()
      if (roll < 0.08) return failed
      if (roll < 0.16) return succeeded
      return stage(stages[Math.floor(next() * stages.length)]!, next() < 0.4 ? null : Math.floor(next() * 120))
    })
    const start = next() < 0.3 ? doc({}) : doc({ status: 'PROCESSING', progress: Math.floor(next() * 100), processing_stage: 'RUNNING', started_at: created })
    const folded = foldEvents(start, events, {}, now)
    t.same(folded.doc, oneWriteEach(start, events), `seed ${seed}`)
    t.same({ ...start, ...folded.set }, folded.doc, `seed ${seed}: the one $set reaches the same record`)
    if (folded.set === null) t.same(folded.doc, start, `seed ${seed}: nothing to write only when nothing changed`)
  }
})

t.test('a stage event without progress, folded after a progress event, keeps the progress', async (t) => {
  const folded = foldEvents(doc({ status: 'PROCESSING', progress: 10, processing_stage: 'RUNNING' }), [stage('RUNNING', 90), stage('PROBING', null)], {}, now)
  t.match(folded.set, { progress: 90, processing_stage: 'PROBING' })
  const ended = foldEvents(doc({}), [stage('RUNNING', 55), stage('UPLOADING', null), failed], {}, now)
  t.match(ended.set, { status: 'FAILED', progress: 55, processing_stage: null, started_at: now })
})

t.test('the first terminal event ends the command; what follows it changes nothing', async (t) => {
  const events = [stage('RUNNING', 40), failed, succeeded, stage('UPLOADING', 99)]
  t.equal(endingEvent(doc({ status: 'PROCESSING' }), events), failed)
  t.equal(endingEvent(doc({ status: 'SUCCESS' }), events), null, 'a replay: the record ended already')
  t.equal(endingEvent(doc({ status: 'PROCESSING' }), [stage('RUNNING', 40)]), null)
  t.match(foldEvents(doc({ status: 'PROCESSING' }), events, {}, now).doc, { status: 'FAILED', progress: 40, processing_stage: null, error_status: 'FFMPEG_FAILED' })
  t.same(foldEvents(doc({ status: 'SUCCESS', progress: 100 }), events, {}, now), { doc: doc({ status: 'SUCCESS', progress: 100 }), set: null }, 'a terminal record is never written again')
})
