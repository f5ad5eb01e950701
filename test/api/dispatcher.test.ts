import t from 'tap'
import { eventually } from '../harness/eventually.js'
import type { CommandSpec } from '../../contracts/command-spec.js'
import type { Sleep } from '../../api/clock.js'
import { CommandRepository } from '../../api/commands/command-repository.js'
import { Dispatcher } from '../../api/dispatcher/dispatcher.js'
import { interleaved, type Around } from '../harness/interleaved.js'
import type { Executor } from '../../api/executors/executor.js'
import { createLogger } from '../../api/logger.js'
import { startApi } from '../harness/api.js'
import { newCommandDocument } from '../../api/commands/command-document.js'
import { COMMAND_BODY, COMMAND_DRAFT, submit } from './dispatch-fixtures.js'

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

/** A poll interval that never ends by itself: only a nudge or stop() wakes the dispatcher. Counts its sleeps. */
function sleepUntilWoken(): { sleep: Sleep; sleeps: () => number } {
  let sleeps = 0
  const sleep: Sleep = (_ms, signal) =>
    new Promise((resolve) => {
      sleeps += 1
      if (signal.aborted) resolve()
      else signal.addEventListener('abort', () => resolve(), { once: true })
    })
  return { sleep, sleeps: () => sleeps }
}

const quiet = createLogger('test', 'silent')

t.test('outbox dispatch', async (t) => {
  let now = new Date('2026-01-01T00:00:00Z')
  const clock = () => now
  let nudges = 0
  const api = await startApi(t, { clock, onCommandsAccepted: () => void (nudges += 1) })
  const { api_key, account_id } = await api.createAccount('business')
  const commands = api.db.collection('commands')
  const dispatcher = (executor: Executor, options: { pollIntervalMs?: number; leaseMs?: number; sleep?: Sleep } = {}) =>
    new Dispatcher({ commands: api.app.commands, executor, logger: quiet, now: clock, backoffMs: (n) => n * 1_000, ...options })

  t.test('a command accepted while the dispatcher is stopped is dispatched exactly once when it starts', async (t) => {
    const [commandId] = await submit(api, api_key)
    t.equal(nudges, 1, 'acceptance nudges the in-process dispatcher')
    t.match(await commands.findOne({ _id: commandId as never }), { status: 'QUEUED', dispatch_state: 'waiting', dispatch_attempts: 0 }, 'accepted waiting for its hand-off')
    const executor = new RecordingExecutor()
    const running = dispatcher(executor, { pollIntervalMs: 20 })
    running.start()
    t.teardown(() => running.stop())
    await eventually('1 hand-off(s) recorded', () => executor.handed.length === 1)
    // A later command handed off proves the polls in between did not hand the first over again.
    const [later] = await submit(api, api_key)
    await eventually('2 hand-off(s) recorded', () => executor.handed.length === 2)
    await running.stop()
    t.same(executor.handed.map((spec) => spec.commandId), [commandId, later])
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
    t.match(await commands.findOne({ _id: commandId as never }), { status: 'QUEUED', dispatch_state: 'done', dispatch_attempts: 1, dispatch_claim: null })
  })

  t.test('a failed hand-off is retried after its backoff, then marked done', async (t) => {
    const [commandId] = await submit(api, api_key)
    const executor = new RecordingExecutor(1)
    const retrying = dispatcher(executor)
    t.equal(await retrying.drain(), 0, 'the first hand-off fails')
    t.match(await commands.findOne({ _id: commandId as never }), {
      dispatch_state: 'waiting',
      dispatch_attempts: 1,
      dispatch_last_error: 'executor unavailable',
      dispatch_due_at: new Date(now.getTime() + 1_000),
      dispatch_claim: null,
    })
    t.equal(await retrying.drain(), 0, 'not due again before its backoff')
    t.equal(executor.calls, 1)
    now = new Date(now.getTime() + 1_000)
    t.equal(await retrying.drain(), 1, 'retried once due')
    t.equal(executor.calls, 2)
    t.match(await commands.findOne({ _id: commandId as never }), { dispatch_state: 'done', dispatch_attempts: 2 })
  })

  t.test('a command claimed by a dispatcher that died is handed off when the lease ends', async (t) => {
    const [commandId] = await submit(api, api_key)
    // What a dispatcher that died right after its claim leaves: the record held, nobody to finish it.
    t.ok(await new CommandRepository(api.db).dispatch.claimOne(commandId!, now, 60_000))
    const executor = new RecordingExecutor()
    const survivor = dispatcher(executor, { leaseMs: 60_000 })
    t.equal(await survivor.drain(), 0, 'the lease still holds')
    now = new Date(now.getTime() + 60_000)
    t.equal(await survivor.drain(), 1)
    t.same(executor.handed.map((s) => s.commandId), [commandId])
    t.match(await commands.findOne({ _id: commandId as never }), { dispatch_state: 'done', dispatch_attempts: 2 })
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
    t.equal(await commands.countDocuments({ dispatch_state: 'waiting' }), 0)
  })

  t.test('a nudge wakes a dispatcher between its polls, and stop() does not wait for the next one', async (t) => {
    const executor = new RecordingExecutor()
    const { sleep, sleeps } = sleepUntilWoken()
    const sleepy = dispatcher(executor, { sleep })
    sleepy.start()
    t.teardown(() => sleepy.stop())
    await eventually('the dispatcher asleep', () => sleeps() === 1) // its first round found nothing: asleep until woken
    const [commandId] = await submit(api, api_key)
    sleepy.nudge()
    await eventually('1 hand-off(s) recorded', () => executor.handed.length === 1)
    t.equal(executor.handed[0]?.commandId, commandId)
    await sleepy.stop() // would never resolve if stop() waited for the sleep to end by itself
    t.pass('stopped')
  })

  t.test('a nudge after another dispatcher handed commands off hands off only what still waits', async (t) => {
    await submit(api, api_key, 2)
    t.equal(await dispatcher(new RecordingExecutor()).drain(), 2)
    const executor = new RecordingExecutor()
    const { sleep, sleeps } = sleepUntilWoken()
    const late = dispatcher(executor, { sleep })
    late.start()
    t.teardown(() => late.stop())
    await eventually('the dispatcher asleep', () => sleeps() === 1)
    late.nudge()
    // A command accepted after them: the only one still waiting.
    const [fresh] = await submit(api, api_key)
    late.nudge()
    await eventually('1 hand-off(s) recorded', () => executor.handed.length === 1)
    await late.stop()
    t.same(executor.handed.map((spec) => spec.commandId), [fresh])
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

  t.test("a command's hand-off takes its account's turn and slot in one write before the claim, and writes nothing more to the schedule before the hand-off is recorded", async (t) => {
    const [commandId] = await submit(api, api_key)
    const order: string[] = []
    const executor: Executor = {
      name: 'ordering',
      execute: async () => void order.push('execute'),
    }
    const around: Around = async (step, work) => {
      const result = await work()
      order.push(step)
      return result
    }
    const handed = await new Dispatcher({ commands: interleaved(api.app.commands, around), executor, logger: quiet, now: clock, concurrency: 1 }).drain()
    t.equal(handed, 1)
    // Reads (which account is next, which are waiting) write nothing; then the account's next turn finds nothing due.
    const reads = new Set(['schedule.nextDue', 'schedule.waitingAccounts'])
    const writes = order.filter((step) => (step.startsWith('schedule.') && !reads.has(step)) || ['due.claim', 'execute', 'dispatch.finish'].includes(step))
    t.same(writes.slice(0, 4), ['schedule.takeTurn', 'due.claim', 'execute', 'dispatch.finish'])
    t.match(await commands.findOne({ _id: commandId as never }), { dispatch_state: 'done' }, 'the hand-off is recorded')
  })

  t.test("an executor that records its run with the hand-off writes it in the one write that marks the hand-off done", async (t) => {
    const [commandId] = await submit(api, api_key)
    const order: string[] = []
    const recorded: boolean[] = []
    const executor: Executor = {
      name: 'recording-its-run',
      execute: async (_spec, handOff) => {
        recorded.push(await handOff!.record({ run_state: 'running', run_attempt: 1 }))
        order.push('execute')
      },
    }
    const around: Around = async (step, work) => {
      const result = await work()
      order.push(step)
      return result
    }
    t.equal(await new Dispatcher({ commands: interleaved(api.app.commands, around), executor, logger: quiet, now: clock, concurrency: 1 }).drain(), 1)
    t.same(recorded, [true], 'the write landed: the run may start')
    t.same(
      order.filter((step) => step.startsWith('dispatch.')),
      ['dispatch.finish'],
      'one write for the hand-off and the run: the dispatcher writes no finish of its own',
    )
    t.match(await commands.findOne({ _id: commandId as never }), { dispatch_state: 'done', dispatch_claim: null, dispatch_queue: null, run_state: 'running', run_attempt: 1 })
  })

  t.test('a run recorded after its claim was lost to another dispatcher writes nothing, and the command is not put off', async (t) => {
    const [commandId] = await submit(api, api_key)
    const recorded: boolean[] = []
    const executor: Executor = {
      name: 'slow-recording',
      execute: async (_spec, handOff) => {
        // The lease ends while this hand-off works, and another dispatcher claims the command.
        now = new Date(now.getTime() + 60_000)
        t.ok(await new CommandRepository(api.db).dispatch.claimOne(commandId!, now, 60_000), 'taken over')
        recorded.push(await handOff!.record({ run_state: 'running', run_attempt: 1 }))
      },
    }
    t.equal(await dispatcher(executor, { leaseMs: 60_000 }).drain(), 1)
    t.same(recorded, [false], 'the write found the claim gone: the run must not start')
    const doc = await commands.findOne({ _id: commandId as never })
    t.match(doc, { dispatch_state: 'waiting', dispatch_attempts: 2 }, "still the other dispatcher's to finish")
    t.notOk(doc && 'run_state' in doc, 'no run recorded')
    t.notOk(doc && 'dispatch_last_error' in doc, 'not put off as a failed hand-off')
  })

  t.test('a command whose account was never announced (its API process died between the insert and the announcement) is handed off at the next round', async (t) => {
    // What such a crash leaves: the record, waiting for its hand-off, and nothing in the schedule.
    const lost = newCommandDocument(COMMAND_DRAFT, { commandId: 'cmd_lost_announcement', accountId: 'acc_lost' }, now)
    await commands.insertOne(lost as never)
    const executor = new RecordingExecutor()
    t.equal(await dispatcher(executor).drain(), 1)
    t.same(executor.handed.map((spec) => spec.commandId), [lost._id])
    t.match(await commands.findOne({ _id: lost._id as never }), { dispatch_state: 'done', dispatch_attempts: 1 })
  })

  t.test('drains that find nothing due look for unannounced accounts at most once a poll interval, and a leftover is found once it has passed', async (t) => {
    const looks: string[] = []
    const around: Around = async (step, work) => {
      if (step === 'unannouncedAccount') looks.push(step)
      return work()
    }
    const executor = new RecordingExecutor()
    const idle = new Dispatcher({ commands: interleaved(api.app.commands, around), executor, logger: quiet, now: clock, pollIntervalMs: 1_000 })
    t.equal(await idle.drain(), 0)
    t.equal(await idle.drain(), 0)
    t.equal(looks.length, 1, 'the second drain, within the interval, reads nothing for it')
    const lost = newCommandDocument(COMMAND_DRAFT, { commandId: 'cmd_lost_later', accountId: 'acc_lost_later' }, now)
    await commands.insertOne(lost as never)
    t.equal(await idle.drain(), 0, 'not looked for within the interval')
    now = new Date(now.getTime() + 1_000)
    t.equal(await idle.drain(), 1, 'handed off at the first drain after it')
    t.same(executor.handed.map((spec) => spec.commandId), [lost._id])
  })
})
