import { setTimeout as delay } from 'node:timers/promises'
import t from 'tap'
import type { CommandSpec } from '../../contracts/command-spec.js'
import { Dispatcher } from '../../api/dispatcher/dispatcher.js'
import type { Executor } from '../../api/executors/executor.js'
import { createLogger } from '../../api/logger.js'
import { startApi } from '../harness/api.js'
import { COMMAND_BODY, submit, until } from './dispatch-fixtures.js'

/** An Executor (our own interface) that records what it is handed and fails the first `failures` calls. */
class RecordingExecutor implements Executor {
  readonly name = 'recording'
  readonly handed: CommandSpec[] = []
  calls = 0
  constructor(private failures = 0) {}
  async execute(spec: CommandSpec): Promise<void> {
    this.calls += 1
    if (this.failures > 0) {
      this.failures -= 1
      throw new Error('executor unavailable')
    }
    this.handed.push(spec)
  }
}

const quiet = createLogger('test', 'silent')

t.test('outbox dispatch', async (t) => {
  let now = new Date('2026-01-01T00:00:00Z')
  const clock = () => now
  let nudges = 0
  const api = await startApi(t, { clock, onCommandsAccepted: () => void (nudges += 1) })
  const { api_key, account_id } = await api.createAccount('business')
  const commands = api.db.collection('commands')
  const queue = api.db.collection('dispatch_queue')
  const dispatcher = (executor: Executor, options: { pollIntervalMs?: number; leaseMs?: number } = {}) =>
    new Dispatcher({ db: api.db, executor, logger: quiet, now: clock, backoffMs: (n) => n * 1_000, ...options })

  t.test('a command accepted while the dispatcher is stopped is dispatched exactly once when it starts', async (t) => {
    const [commandId] = await submit(api, api_key)
    t.equal(nudges, 1, 'acceptance nudges the in-process dispatcher')
    const executor = new RecordingExecutor()
    const running = dispatcher(executor, { pollIntervalMs: 20 })
    running.start()
    t.teardown(() => running.stop())
    await until(() => executor.handed.length === 1)
    await delay(100) // several more polls
    await running.stop()
    t.equal(executor.calls, 1)
    t.match(executor.handed[0], {
      commandId,
      accountId: account_id,
      commandType: 'FFMPEG_COMMAND',
      inputFiles: COMMAND_BODY.input_files,
      outputFiles: COMMAND_BODY.output_files,
      ffmpegCommands: [COMMAND_BODY.ffmpeg_command],
      ytdlp: null,
      storageDestinationId: null,
      submittedAt: now.toISOString(),
    })
    t.match(await commands.findOne({ _id: commandId as never }), { status: 'QUEUED', dispatch: { state: 'claimed', claimed_at: now } })
    t.equal(await queue.countDocuments(), 0, 'its queue entry is gone')
  })

  t.test('a failed hand-off is retried after its backoff, then marked dispatched', async (t) => {
    const [commandId] = await submit(api, api_key)
    const executor = new RecordingExecutor(1)
    const retrying = dispatcher(executor)
    t.equal(await retrying.drain(), 0, 'the first hand-off fails')
    t.match(await commands.findOne({ _id: commandId as never }), { dispatch: { state: 'claimed' } }, 'claimed before the executor was called')
    t.match(await queue.findOne({ _id: commandId as never }), { attempts: 1, last_error: 'executor unavailable', due_at: new Date(now.getTime() + 1_000) })
    t.equal(await retrying.drain(), 0, 'not due again before its backoff')
    t.equal(executor.calls, 1)
    now = new Date(now.getTime() + 1_000)
    t.equal(await retrying.drain(), 1, 'retried once due')
    t.equal(executor.calls, 2)
    t.equal(await queue.countDocuments({ _id: commandId as never }), 0, 'handed off: the entry is gone')
  })

  t.test('a command claimed by a dispatcher that died is taken over when the lease ends', async (t) => {
    const [commandId] = await submit(api, api_key)
    // What a dispatcher of the previous layout that crashed right after its claim left: attempts moved on, record not marked.
    await api.db.collection('dispatch_leases').insertOne({ _id: `${commandId}:0` as never, command_id: commandId, token: 'dead', expires_at: new Date(now.getTime() + 60_000) })
    await queue.updateOne({ _id: commandId as never }, { $set: { attempts: 1, due_at: new Date(now.getTime() + 60_000) } })
    const executor = new RecordingExecutor()
    const survivor = dispatcher(executor, { leaseMs: 60_000 })
    t.equal(await survivor.drain(), 0, 'the lease still holds')
    now = new Date(now.getTime() + 60_000)
    t.equal(await survivor.drain(), 1)
    t.same(executor.handed.map((s) => s.commandId), [commandId])
  })

  t.test('a lease left by a dispatcher that died before its claim write expires and is taken over', async (t) => {
    const [commandId] = await submit(api, api_key)
    await api.db.collection('dispatch_leases').insertOne({ _id: `${commandId}:0` as never, command_id: commandId, token: 'dead', expires_at: new Date(now.getTime() + 60_000) })
    const executor = new RecordingExecutor()
    const survivor = dispatcher(executor, { leaseMs: 60_000 })
    t.equal(await survivor.drain(), 0, 'the lease still holds')
    now = new Date(now.getTime() + 60_000)
    t.equal(await survivor.drain(), 1)
    t.same(executor.handed.map((s) => s.commandId), [commandId])
    t.equal(await api.db.collection('dispatch_leases').countDocuments({ command_id: commandId }), 2, 'the dead lease and its successor are kept after the hand-off')
  })

  t.test('a command whose queue entry a crash kept from being written is recovered', async (t) => {
    const [commandId] = await submit(api, api_key)
    await queue.deleteOne({ _id: commandId as never }) // the API died between the record's insert and its entry's
    const executor = new RecordingExecutor()
    const recovering = dispatcher(executor)
    t.equal(await recovering.drain(), 0, 'nothing in the queue')
    t.equal(await recovering.recover(), 1)
    t.equal(await recovering.recover(), 0, 'recovery is idempotent')
    t.equal(await recovering.drain(), 1)
    t.same(executor.handed.map((s) => s.commandId), [commandId])
  })

  t.test('a started dispatcher runs the recovery scan first', async (t) => {
    const [commandId] = await submit(api, api_key)
    await queue.deleteOne({ _id: commandId as never })
    const executor = new RecordingExecutor()
    const running = dispatcher(executor, { pollIntervalMs: 20 })
    running.start()
    t.teardown(() => running.stop())
    await until(() => executor.handed.length === 1)
    await running.stop()
    t.equal(executor.handed[0]?.commandId, commandId)
  })

  t.test('an entry the recovery scan re-created for a command claimed meanwhile is dropped without a second hand-off', async (t) => {
    const [commandId] = await submit(api, api_key)
    const first = new RecordingExecutor()
    t.equal(await dispatcher(first).drain(), 1)
    await queue.insertOne({ _id: commandId as never, due_at: now, attempts: 0, last_error: null, recovered: true })
    const second = new RecordingExecutor()
    const late = dispatcher(second, { leaseMs: 60_000 })
    t.equal(await late.drain(), 0, 'the first hand-off\'s lease still holds the attempt')
    now = new Date(now.getTime() + 60_000)
    t.equal(await late.drain(), 0, 'taken over once the lease ends, and found claimed')
    t.equal(second.calls, 0)
    t.equal(await queue.countDocuments({ _id: commandId as never }), 0)
  })

  t.test('a command claimed by a dispatcher that died before the hand-off is handed off when its lease ends', async (t) => {
    const [commandId] = await submit(api, api_key)
    // What a claim leaves if the process dies right after it: record claimed, entry a lease ahead.
    await commands.updateOne({ _id: commandId as never }, { $set: { dispatch: { state: 'claimed', claimed_at: now } } })
    await queue.updateOne({ _id: commandId as never }, { $set: { attempts: 1, due_at: new Date(now.getTime() + 60_000) } })
    const executor = new RecordingExecutor()
    const survivor = dispatcher(executor)
    t.equal(await survivor.drain(), 0)
    now = new Date(now.getTime() + 60_000)
    t.equal(await survivor.drain(), 1)
    t.same(executor.handed.map((s) => s.commandId), [commandId])
  })

  t.test('two dispatchers racing over the same outbox hand each command over once', async (t) => {
    const ids = await submit(api, api_key, 30)
    const a = new RecordingExecutor()
    const b = new RecordingExecutor()
    const [fromA, fromB] = await Promise.all([dispatcher(a).drain(), dispatcher(b).drain()])
    t.equal(fromA + fromB, 30)
    const handed = [...a.handed, ...b.handed].map((s) => s.commandId)
    t.equal(handed.length, 30, 'no command twice')
    t.same(new Set(handed), new Set(ids), 'every command once')
    t.equal(await commands.countDocuments({ 'dispatch.state': 'pending' }), 0)
  })

  t.test('a nudge wakes a dispatcher that polls rarely', async (t) => {
    const executor = new RecordingExecutor()
    const sleepy = dispatcher(executor, { pollIntervalMs: 60_000 })
    sleepy.start()
    t.teardown(() => sleepy.stop())
    await delay(50) // its first round finds nothing and it goes to sleep
    const [commandId] = await submit(api, api_key)
    sleepy.nudge()
    await until(() => executor.handed.length === 1, 2_000)
    t.equal(executor.handed[0]?.commandId, commandId)
    const started = Date.now()
    await sleepy.stop()
    t.ok(Date.now() - started < 1_000, 'stop does not wait out the poll interval')
  })

  t.test('yt-dlp commands reach the executor with their URLs and format', async (t) => {
    const res = await api.app.inject({
      method: 'POST',
      url: '/api/v1/run-ytdlp-command',
      headers: { 'x-api-key': api_key },
      payload: { input_urls: { in_talk: 'https://v.example.com/w?v=1' }, format_selector: '720p', ffmpeg_command: '-i {{in_talk}} {{out_a}}', output_files: { out_a: 'a.mp3' } },
    })
    const executor = new RecordingExecutor()
    await dispatcher(executor).drain()
    t.match(executor.handed[0], {
      commandId: res.json().command_id,
      commandType: 'YTDLP_COMMAND',
      inputFiles: {},
      outputFiles: { out_a: 'a.mp3' },
      ffmpegCommands: ['-i {{in_talk}} {{out_a}}'],
      ytdlp: { inputUrls: { in_talk: 'https://v.example.com/w?v=1' }, formatSelector: '720p' },
    })
  })
})
