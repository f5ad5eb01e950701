import t from 'tap'
import { JSONCodec, type NatsConnection } from 'nats'
import { COMPLETION_STREAM, completionSubject } from '../../contracts/completion-events.js'
import { failedEvent, STATUS_STREAM, statusEventId, statusSubject, type OutputFileResult, type StatusEvent, type StatusEventBody } from '../../contracts/status-events.js'
import type { CommandDocument } from '../../api/commands/command-document.js'
import { createLogger } from '../../api/logger.js'
import { outputFileDocument, outputFileMeta } from '../../api/files/output-files.js'
import { processingUpdate, terminalUpdate } from '../../api/projector/projection.js'
import { StatusProjector } from '../../api/projector/status-projector.js'
import { COMPLETION_STREAM_DEFINITION, ensureStream, STATUS_STREAM_DEFINITION } from '../../contracts/nats-streams.js'
import { publishStatusEvent } from '../../contracts/status-publisher.js'
import { startWorld, until } from './world.js'
import { seededRandom } from '../harness/random.js'

const codec = JSONCodec()
const DURABLE = 'ffkube-status-projector'

const OUTPUT: Omit<OutputFileResult, 'object_key' | 'bucket'> = {
  filename: 'small.mp4', storage_location: 'INTERNAL', size_mbytes: 1, duration: 2, file_type: 'video', file_format: 'mp4', codec: 'h264',
  pixel_format: 'yuv420p', mime_type: 'video/mp4', width: 640, height: 360, frame_rate: 25, bitrate_video_kb: 900, bitrate_audio_kb: 128, sample_rate: 48000, channels: 2,
}

/**
 * What a runner (and a redelivering JetStream) might send about one command:
 * stages in order with growing progress, the odd late lower percent, stage
 * events without progress, repeats of earlier events, then SUCCESS, FAILED,
 * or nothing yet, sometimes followed by stragglers.
 */
function eventsFor(commandId: string, bucket: string, next: () => number): StatusEvent[] {
  const bodies: StatusEventBody[] = [{ type: 'PROCESSING', stage: 'FETCHING', progress: null }, { type: 'PROCESSING', stage: 'RUNNING', progress: null }]
  let progress = 0
  for (let i = Math.floor(next() * 6); i > 0; i--) {
    progress = Math.min(100, progress + Math.floor(next() * 30))
    bodies.push({ type: 'PROCESSING', stage: 'RUNNING', progress: next() < 0.2 ? Math.max(0, progress - 20) : progress })
  }
  bodies.push({ type: 'PROCESSING', stage: 'PROBING', progress: null }, { type: 'PROCESSING', stage: 'UPLOADING', progress: null })
  if (next() < 0.3) bodies.splice(1 + Math.floor(next() * (bodies.length - 1)), 0, bodies[Math.floor(next() * bodies.length)]!)
  const ending = next()
  if (ending < 0.45) {
    bodies.push({ type: 'SUCCESS', output_files: { out_small: { ...OUTPUT, bucket, object_key: `outputs/${commandId}/small.mp4` } }, ffmpeg_command_run_seconds: 1.5, failed_files: null })
  } else if (ending < 0.8) {
    bodies.push({ type: 'FAILED', error_status: 'FFMPEG_FAILED', error_message: 'exit status 1', ffmpeg_command_run_seconds: 0.5, failed_files: null })
  }
  if (ending < 0.8 && next() < 0.5) bodies.push({ type: 'PROCESSING', stage: 'RUNNING', progress: 50 })
  const emitted_at = new Date().toISOString()
  return bodies.map((body) => ({ ...body, command_id: commandId, event_id: statusEventId(commandId, body), emitted_at }) as StatusEvent)
}

/** The record after one read and one write per event, as the projector applied events before it coalesced them. */
function oneWriteEach(doc: CommandDocument, events: StatusEvent[]): CommandDocument {
  const now = new Date()
  let current = doc
  for (const event of events) {
    const outputs =
      event.type === 'SUCCESS'
        ? Object.fromEntries(Object.entries(event.output_files).map(([alias, result]) => [alias, outputFileMeta(outputFileDocument(current, alias, result, null, now))]))
        : {}
    const update = event.type === 'PROCESSING' ? processingUpdate(current, event, now) : terminalUpdate(current, event, outputs, now)
    if (update) current = { ...current, ...update }
  }
  return current
}

/** The fields the projector owns, without its timestamps and signed URLs. */
function projected(doc: CommandDocument | null): Record<string, unknown> {
  if (!doc) return {}
  return {
    status: doc.status,
    progress: doc.progress ?? null,
    processing_stage: doc.processing_stage ?? null,
    started: Boolean(doc.started_at),
    completed: Boolean(doc.completed_at),
    error_status: doc.error_status ?? null,
    error_message: doc.error_message ?? null,
    ffmpeg_command_run_seconds: doc.ffmpeg_command_run_seconds ?? null,
    failed_files: doc.failed_files ?? null,
    output_results: doc.output_results ? Object.fromEntries(Object.entries(doc.output_results).map(([alias, meta]) => [alias, { file_id: meta.file_id, filename: meta.filename }])) : null,
  }
}

/** How many completion events the stream holds per command subject. */
async function completions(nc: NatsConnection): Promise<Record<string, number>> {
  const jsm = await nc.jetstreamManager()
  const info = await jsm.streams.info(COMPLETION_STREAM, { subjects_filter: '>' })
  return info.state.subjects ?? {}
}

/** Resolves once the projector has acknowledged every status event in the stream. */
async function allAcknowledged(nc: NatsConnection): Promise<void> {
  const jsm = await nc.jetstreamManager()
  await until('every status event acknowledged', async () => {
    const info = await jsm.consumers.info(STATUS_STREAM, DURABLE)
    return info.num_pending === 0 && info.num_ack_pending === 0
  }, 30_000)
}

t.test('a backlog of many commands\' events ends with each record as one write per event would leave it, in far fewer writes, each ending announced once', async (t) => {
  const world = await startWorld(t)
  const { api_key } = await world.api.createAccount('business')
  const commands = world.api.db.collection<CommandDocument>('commands')
  const next = seededRandom(20260301)
  const plans: { id: string; before: CommandDocument; events: StatusEvent[] }[] = []
  for (let i = 0; i < 10; i++) {
    const id = await world.submit(api_key)
    plans.push({ id, before: (await commands.findOne({ _id: id }))!, events: eventsFor(id, world.api.s3Bucket, next) })
  }
  // Interleaved across commands, as concurrent runners publish; each under its own msgID, so repeats reach the projector as redeliveries would.
  await ensureStream(world.nc, STATUS_STREAM_DEFINITION)
  const js = world.nc.jetstream()
  let published = 0
  for (let round = 0; plans.some((p) => p.events.length > round); round++) {
    for (const { id, events } of plans) {
      const event = events[round]
      if (!event) continue
      await js.publish(statusSubject(id), codec.encode(event), { msgID: `${event.event_id}#${round}` })
      published += 1
    }
  }
  const projector = new StatusProjector({ nats: world.nc, commands: world.api.app.commands, files: world.api.app.files, logger: createLogger('test', 'silent') })
  await projector.start()
  t.teardown(() => projector.stop())
  await allAcknowledged(world.nc)
  const announced = await completions(world.nc)
  let writes = 0
  for (const { id, before, events } of plans) {
    const expected = oneWriteEach(before, events)
    const after = await commands.findOne({ _id: id })
    t.same(projected(after), projected(expected), `${id}: ${events.map((e) => e.event_id.slice(id.length + 1)).join(' ')}`)
    t.equal(announced[completionSubject(id)] ?? 0, expected.status === 'SUCCESS' || expected.status === 'FAILED' ? 1 : 0, `${id}: announced once if it ended`)
    writes += after?.projection_revision ?? 0
  }
  // Each projector write moves its record to the next revision.
  t.ok(writes <= plans.length * 2, `a backlog is applied in a round or two per command, not a write per event (${writes} writes for ${published} events)`)
})

t.test('a failure between the terminal write and its acknowledgement replays the event, and the command is announced once', async (t) => {
  const world = await startWorld(t)
  const { api_key } = await world.api.createAccount('business')
  const commandId = await world.submit(api_key)
  const commands = world.api.db.collection<CommandDocument>('commands')
  const jsm = await world.nc.jetstreamManager()
  const first = new StatusProjector({ nats: world.nc, commands: world.api.app.commands, files: world.api.app.files, logger: createLogger('test', 'silent') })
  await first.start()
  // Without its stream the completion event cannot be published: the record is written, the event stays unacknowledged.
  await jsm.streams.delete(COMPLETION_STREAM)
  const js = world.nc.jetstream()
  const running: StatusEventBody = { type: 'PROCESSING', stage: 'RUNNING', progress: 40 }
  await js.publish(statusSubject(commandId), codec.encode({ ...running, command_id: commandId, event_id: statusEventId(commandId, running), emitted_at: new Date().toISOString() }))
  await publishStatusEvent(js, failedEvent({ commandId, errorStatus: 'FFMPEG_FAILED', errorMessage: 'exit status 1', at: new Date() }), { logger: createLogger('test', 'silent') })
  const written = await until('the terminal write', async () => {
    const doc = await commands.findOne({ _id: commandId })
    return doc?.status === 'FAILED' ? doc : null
  })
  await first.stop()
  const pending = await jsm.consumers.info(STATUS_STREAM, DURABLE)
  t.ok(pending.num_ack_pending + pending.num_pending > 0, 'the terminal event was not acknowledged')

  // A new process, as after a crash: the replay finds the record terminal, announces it, and only then acknowledges.
  await ensureStream(world.nc, COMPLETION_STREAM_DEFINITION)
  const second = new StatusProjector({ nats: world.nc, commands: world.api.app.commands, files: world.api.app.files, logger: createLogger('test', 'silent') })
  await second.start()
  t.teardown(() => second.stop())
  await until('the completion event', async () => (await completions(world.nc))[completionSubject(commandId)] === 1, 20_000)
  await allAcknowledged(world.nc)
  // And a terminal event delivered once more after all that (an ack lost after the publish) announces nothing new.
  await js.publish(statusSubject(commandId), codec.encode({ type: 'FAILED', error_status: 'FFMPEG_FAILED', error_message: 'exit status 1', ffmpeg_command_run_seconds: null, failed_files: null, command_id: commandId, event_id: `${commandId}:FAILED`, emitted_at: new Date().toISOString() }))
  // Acknowledged only after its completion event, had it published one.
  await allAcknowledged(world.nc)
  t.equal((await completions(world.nc))[completionSubject(commandId)], 1, 'one completion event in all')
  const after = await commands.findOne({ _id: commandId })
  t.match(after, { status: 'FAILED', progress: 40, error_status: 'FFMPEG_FAILED' })
  t.equal(after?.completed_at?.getTime(), written.completed_at?.getTime(), 'the record was written once')
})
