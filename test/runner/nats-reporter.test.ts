import { connect, JSONCodec } from 'nats'
import { pino } from 'pino'
import t from 'tap'
import { STATUS_STREAM, statusSubject, type StatusEvent } from '../../contracts/status-events.js'
import { NatsReporter } from '../../runner-image/runner/report/nats-reporter.js'
import { startNats } from '../harness/nats.js'
import { scratchDir } from '../harness/scratch.js'
import type { TestS3 } from '../harness/s3.js'
import { runRunner, specOf } from './harness.js'

t.test('publishes status events to JetStream, dropping a re-sent one', async (t) => {
  const nats = await startNats(t)
  const commandId = `c-${Date.now()}`
  const logger = pino({ level: 'silent' })
  const reporter = await NatsReporter.connect({ url: nats.url, commandId, logger, now: () => new Date('2026-01-01T00:00:00Z') })
  await reporter.report({ type: 'PROCESSING', stage: 'RUNNING', progress: 10 })
  await reporter.report({ type: 'PROCESSING', stage: 'RUNNING', progress: 10 })
  await reporter.report({ type: 'FAILED', error_status: 'FFMPEG_FAILED', error_message: 'boom', ffmpeg_command_run_seconds: 1.5, failed_files: null })
  await reporter.close()
  // A second runner process for the same command (a restart) re-sends its terminal event.
  const again = await NatsReporter.connect({ url: nats.url, commandId, logger })
  await again.report({ type: 'FAILED', error_status: 'FFMPEG_FAILED', error_message: 'boom', ffmpeg_command_run_seconds: 1.5, failed_files: null })
  await again.close()

  const nc = await connect({ servers: nats.url })
  t.teardown(() => nc.close())
  const jsm = await nc.jetstreamManager()
  const codec = JSONCodec<StatusEvent>()
  const events: StatusEvent[] = []
  const info = await jsm.streams.info(STATUS_STREAM)
  for (let seq = info.state.first_seq; seq <= info.state.last_seq; seq++) {
    const message = await jsm.streams.getMessage(STATUS_STREAM, { seq })
    if (message.subject === statusSubject(commandId)) events.push(codec.decode(message.data))
  }
  t.same(events.map((e) => e.event_id), [`${commandId}:PROCESSING:RUNNING:10`, `${commandId}:FAILED`])
  t.match(events[1], { type: 'FAILED', command_id: commandId, error_status: 'FFMPEG_FAILED', emitted_at: '2026-01-01T00:00:00.000Z' })
})

t.test('the runner reports to JetStream when told to', async (t) => {
  const nats = await startNats(t)
  const dir = await scratchDir(t)
  // The command is refused before any upload, so no storage is needed.
  const noStorage = { endpoint: 'http://127.0.0.1:9', region: 'us-east-1', bucket: 'none', accessKeyId: 'x', secretAccessKey: 'y' } as TestS3
  const spec = specOf({ inputFiles: { in_a: 'http://127.0.0.1:9/a.mp4' }, outputFiles: { out_b: 'b.mp4' }, ffmpegCommands: ['ffmpeg -i {{in_a}} -f tee {{out_b}}'] })
  const run = await runRunner(dir, spec, noStorage, { FFKUBE_STATUS_REPORTER: 'nats', NATS_URL: nats.url })
  t.equal(run.exitCode, 1)
  t.equal(run.raw, '', 'nothing on stdout')
  const nc = await connect({ servers: nats.url })
  t.teardown(() => nc.close())
  const jsm = await nc.jetstreamManager()
  const message = await jsm.streams.getMessage(STATUS_STREAM, { last_by_subj: statusSubject(spec.commandId) })
  t.match(JSONCodec<StatusEvent>().decode(message.data), { type: 'FAILED', error_status: 'INVALID_COMMAND', event_id: `${spec.commandId}:FAILED` })
  t.equal(message.header?.get('Nats-Msg-Id'), `${spec.commandId}:FAILED`)
})
