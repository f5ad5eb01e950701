import { connect, JSONCodec } from 'nats'
import { pino } from 'pino'
import t from 'tap'
import { ensureStream, STATUS_STREAM_DEFINITION } from '../../contracts/nats-streams.js'
import { STATUS_STREAM, statusSubject, type StatusEvent } from '../../contracts/status-events.js'
import { NatsReporter, StatusStreamMissingError } from '../../runner-image/runner/report/nats-reporter.js'
import { createServiceStreams, startNats } from '../harness/nats.js'
import { scratchDir } from '../harness/scratch.js'
import type { TestS3 } from '../harness/s3.js'
import { runRunner, specOf } from './harness.js'

/** A command the runner refuses before any download or upload, so it needs no storage. */
const refusedCommand = () => specOf({ inputFiles: { in_a: 'http://127.0.0.1:9/a.mp4' }, outputFiles: { out_b: 'b.mp4' }, ffmpegCommands: ["ffmpeg -i {{in_a}} -f tee '[f=mp4]/tmp/b.mp4|{{out_b}}'"] })
const noStorage = { endpoint: 'http://127.0.0.1:9', region: 'us-east-1', bucket: 'none', accessKeyId: 'x', secretAccessKey: 'y' } as TestS3

t.test('publishes status events to JetStream, dropping a re-sent one', async (t) => {
  const nats = await startNats(t)
  await createServiceStreams(t, nats)
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
  await createServiceStreams(t, nats)
  const dir = await scratchDir(t)
  const spec = refusedCommand()
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

/** Deleting FFKUBE_STATUS would disturb whoever else uses a shared server. */
const ownServerOnly = { skip: process.env.NATS_URL ? 'deletes the status stream, so it needs a NATS server of its own' : false }

t.test('a runner makes no JetStream API request: it only publishes to streams the service created', async (t) => {
  const nats = await startNats(t)
  await createServiceStreams(t, nats)
  const dir = await scratchDir(t)
  const spec = refusedCommand()
  // One connection sees both: a publisher's messages reach it in order, so any API request the
  // runner made before its FAILED has arrived once the FAILED has.
  const watcher = await connect({ servers: nats.url })
  t.teardown(() => watcher.close())
  const apiRequests: string[] = []
  const api = watcher.subscribe('$JS.API.>', { callback: (_err, msg) => void apiRequests.push(msg.subject) })
  const terminal = new Promise<void>((resolve) => {
    watcher.subscribe(statusSubject(spec.commandId), { callback: (_err, msg) => {
      if (JSONCodec<StatusEvent>().decode(msg.data).type === 'FAILED') resolve()
    } })
  })
  await watcher.flush()
  const run = await runRunner(dir, spec, noStorage, { FFKUBE_STATUS_REPORTER: 'nats', NATS_URL: nats.url })
  t.equal(run.exitCode, 1, 'the command was refused and reported')
  await terminal
  api.unsubscribe()
  t.same(apiRequests, [], 'no $JS.API request (stream info, create, consumer …) from the runner')
})

t.test('a runner whose status stream does not exist fails loudly, naming it, and creates none', ownServerOnly, async (t) => {
  const nats = await startNats(t)
  const reporter = await NatsReporter.connect({ url: nats.url, commandId: `c-${Date.now()}`, logger: pino({ level: 'silent' }), attempts: 1 })
  t.teardown(() => reporter.close())
  await t.rejects(reporter.report({ type: 'PROCESSING', stage: 'FETCHING', progress: 0 }), StatusStreamMissingError)
  await t.rejects(reporter.report({ type: 'PROCESSING', stage: 'FETCHING', progress: 0 }), /no JetStream stream takes ffkube\.status\.c-\d+ \(no responders\)/)
  // The whole runner: its first event finds no stream, it retries (about 11 s), then exits 2, which the
  // operator turns into RUNNER_FAILED ("the ffmpeg step exited with code 2") on a stream of its own making.
  const run = await runRunner(await scratchDir(t), refusedCommand(), noStorage, { FFKUBE_STATUS_REPORTER: 'nats', NATS_URL: nats.url, LOG_LEVEL: 'silent' })
  t.equal(run.exitCode, 2, 'could not report the outcome: exit 2, not a quiet success')
  const nc = await connect({ servers: nats.url })
  t.teardown(() => nc.close())
  await t.rejects((await nc.jetstreamManager()).streams.info(STATUS_STREAM), /stream not found/, 'the runner created no stream')
})

t.test('a publish that finds no stream is retried with a growing wait, and lands once the stream is back', ownServerOnly, async (t) => {
  const nats = await startNats(t)
  await createServiceStreams(t, nats)
  const nc = await connect({ servers: nats.url })
  t.teardown(() => nc.close())
  const jsm = await nc.jetstreamManager()
  const commandId = `c-${Date.now()}`
  const waits: number[] = []
  const reporter = await NatsReporter.connect({
    url: nats.url, commandId, logger: pino({ level: 'silent' }),
    sleep: async (ms) => {
      waits.push(ms)
      // The stream comes back after the second failure (another process recreated it).
      if (waits.length === 2) await ensureStream(nc, STATUS_STREAM_DEFINITION)
    },
  })
  t.teardown(() => reporter.close())
  await jsm.streams.delete(STATUS_STREAM)
  await reporter.report({ type: 'FAILED', error_status: 'UPLOAD_FAILED', error_message: 'storage unreachable', ffmpeg_command_run_seconds: null, failed_files: null })
  t.equal(waits.length, 2, 'two failed tries, then the one that landed')
  t.ok(waits[1]! > waits[0]!, `the wait grows (${waits.join(', ')} ms)`)
  const message = await jsm.streams.getMessage(STATUS_STREAM, { last_by_subj: statusSubject(commandId) })
  t.match(JSONCodec<StatusEvent>().decode(message.data), { type: 'FAILED', error_status: 'UPLOAD_FAILED', event_id: `${commandId}:FAILED` })
})

t.test('a publish that keeps failing gives up after its attempts and throws', ownServerOnly, async (t) => {
  const nats = await startNats(t)
  await createServiceStreams(t, nats)
  const nc = await connect({ servers: nats.url })
  t.teardown(() => nc.close())
  const waits: number[] = []
  const reporter = await NatsReporter.connect({
    url: nats.url, commandId: `c-${Date.now()}`, logger: pino({ level: 'silent' }), attempts: 3, sleep: async (ms) => void waits.push(ms),
  })
  t.teardown(() => reporter.close())
  await (await nc.jetstreamManager()).streams.delete(STATUS_STREAM)
  await t.rejects(reporter.report({ type: 'PROCESSING', stage: 'RUNNING', progress: 5 }), StatusStreamMissingError)
  t.equal(waits.length, 2, 'three tries, two waits between them')
})

t.test('a runner that starts while NATS is restarting connects once it is back, and its event lands', async (t) => {
  const nats = await startNats(t, { host: '127.0.0.1' })
  await createServiceStreams(t, nats)
  const commandId = `c-restart-${Date.now()}`
  await nats.stop!()
  // Settled either way: a connect that gives up at once must fail the test, not hang it.
  const connecting = NatsReporter.connect({ url: nats.url, commandId, logger: pino({ level: 'silent' }) }).then((reporter) => reporter, (err: unknown) => err as Error)
  await nats.restart!()
  const reporter = await connecting
  if (reporter instanceof Error) throw reporter
  await reporter.report({ type: 'PROCESSING', stage: 'FETCHING', progress: 0 })
  await reporter.close()
  const nc = await connect({ servers: nats.url })
  t.teardown(() => nc.close())
  const message = await (await nc.jetstreamManager()).streams.getMessage(STATUS_STREAM, { last_by_subj: statusSubject(commandId) })
  t.match(JSONCodec<StatusEvent>().decode(message.data), { type: 'PROCESSING', stage: 'FETCHING', command_id: commandId })
})
