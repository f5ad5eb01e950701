import { setTimeout as delay } from 'node:timers/promises'
import { MongoClient } from 'mongodb'
import t from 'tap'
import { eventually } from '../harness/eventually.js'
import type { CommandSpec } from '../../contracts/command-spec.js'
import { newCommandDocument, type CommandDocument } from '../../api/commands/command-document.js'
import { CommandRepository } from '../../api/commands/command-repository.js'
import { Dispatcher, type DispatcherOptions } from '../../api/dispatcher/dispatcher.js'
import type { Executor } from '../../api/executors/executor.js'
import { createLogger } from '../../api/logger.js'
import { interleaved, type Around } from '../harness/interleaved.js'
import { startMongo } from '../harness/mongo.js'
import { seededRandom } from '../harness/random.js'
import { COMMAND_DRAFT, SeededScheduler } from './dispatch-fixtures.js'

/*
 * Several dispatchers on one database: each accepted command is handed to the
 * executor until one hand-off succeeds, then never again; no command is in two
 * hand-offs at once; a dispatcher that dies or stalls loses its claim to
 * another when its lease ends, and its late writes change nothing.
 */

const quiet = createLogger('test', 'silent')
const T0 = new Date('2026-01-01T00:00:00Z')
const LEASE_MS = 60_000

/** Records `count` accepted commands as submission does, with ids that sort in acceptance order. */
async function accept(commands: CommandRepository, prefix: string, count: number, now: Date): Promise<string[]> {
  const docs = Array.from({ length: count }, (_, i) => newCommandDocument(COMMAND_DRAFT, { commandId: `${prefix}_${String(i).padStart(3, '0')}`, accountId: 'acc_claims' }, now))
  await commands.insert(docs)
  return docs.map((doc) => doc._id)
}

/**
 * An Executor (our own interface) shared by several dispatchers: counts each
 * command's calls and successful hand-offs and the most hand-offs of one
 * command in flight at once. `between` runs in the middle of every hand-off
 * (a real one takes a moment, and the other dispatchers run meanwhile);
 * `fails` decides whether a call fails.
 */
class SharedExecutor implements Executor {
  readonly name = 'shared'
  readonly calls = new Map<string, number>()
  readonly handed = new Map<string, number>()
  readonly #active = new Map<string, number>()
  maxOverlap = 0

  constructor(
    private readonly fails: (spec: CommandSpec) => boolean = () => false,
    private readonly between: <T>(work: () => Promise<T>) => Promise<T> = (work) => work(),
  ) {}

  async execute(spec: CommandSpec): Promise<void> {
    const id = spec.commandId
    await this.between(async () => {
      this.calls.set(id, (this.calls.get(id) ?? 0) + 1)
      const active = (this.#active.get(id) ?? 0) + 1
      this.#active.set(id, active)
      this.maxOverlap = Math.max(this.maxOverlap, active)
    })
    await this.between(async () => {
      this.#active.set(id, (this.#active.get(id) ?? 1) - 1)
      if (this.fails(spec)) throw new Error('executor unavailable')
      this.handed.set(id, (this.handed.get(id) ?? 0) + 1)
    })
  }
}

/** An executor whose hand-offs wait until the test lets them end, failing or not. */
class GatedExecutor implements Executor {
  readonly name = 'gated'
  readonly started: string[] = []
  #release: (fail: boolean) => void = () => {}

  async execute(spec: CommandSpec): Promise<void> {
    this.started.push(spec.commandId)
    const fail = await new Promise<boolean>((resolve) => (this.#release = resolve))
    if (fail) throw new Error('executor unavailable')
  }

  release(fail: boolean): void {
    this.#release(fail)
  }
}

t.test('dispatch claims', async (t) => {
  const mongo = await startMongo(t)
  // One connection per racer, so the server really sees the claims at once.
  const client = await MongoClient.connect(mongo.url, { maxPoolSize: 16 })
  t.teardown(() => client.close())
  let databases = 0
  /** A fresh database with its indexes, and a clock its dispatchers share. */
  const world = async () => {
    const db = client.db(`${mongo.dbName}_${databases++}`)
    const commands = new CommandRepository(db)
    await commands.ensureIndexes()
    const clock = { now: T0 }
    const dispatcher = (executor: Executor, options: Partial<DispatcherOptions> = {}) =>
      new Dispatcher({ commands, executor, logger: quiet, now: () => clock.now, backoffMs: (n) => n * 1_000, leaseMs: LEASE_MS, ...options })
    const records = async (ids: string[]) => Promise.all(ids.map(async (id) => (await db.collection<CommandDocument>('commands').findOne({ _id: id }))!))
    return { db, commands, clock, dispatcher, records }
  }

  t.test('two dispatchers interleaved in a seeded order, with failing hand-offs, hand each command over exactly once and never twice at a time', async (t) => {
    for (let seed = 1; seed <= 20; seed++) {
      const { commands, clock, dispatcher, records } = await world()
      const random = seededRandom(seed)
      const scheduler = new SeededScheduler(random)
      const ids = await accept(commands, `seed${seed}`, 8, clock.now)
      // About a third of the hand-offs fail; time moves on between steps (never as far as a lease), so backoffs come due mid-round.
      const executor = new SharedExecutor(
        () => random() < 0.35,
        (work) =>
          scheduler.step(async () => {
            if (random() < 0.3) clock.now = new Date(clock.now.getTime() + 500)
            return work()
          }),
      )
      // Every store call of either dispatcher is one step of the scheduler.
      const racing = () => dispatcher(executor, { commands: interleaved(commands, (_step, work) => scheduler.step(work)), concurrency: 2 })
      const [a, b] = [racing(), racing()]
      let dispatched = 0
      for (let round = 0; round < 100 && executor.handed.size < ids.length; round++) {
        const [fromA, fromB] = await Promise.all([a.drain(), b.drain()])
        dispatched += fromA + fromB
        clock.now = new Date(clock.now.getTime() + 10_000) // past the backoffs of the failures so far
      }
      const calls = [...executor.calls.values()].reduce((x, y) => x + y, 0)
      t.ok(scheduler.steps > 0, `seed ${seed}: ${scheduler.steps} steps, ${calls} hand-offs for ${ids.length} commands`)
      t.same([...executor.handed.keys()].sort(), ids, `seed ${seed}: every command handed over`)
      t.same([...executor.handed.values()].filter((n) => n !== 1), [], `seed ${seed}: none handed over twice`)
      t.equal(executor.maxOverlap, 1, `seed ${seed}: no command in two hand-offs at once`)
      t.equal(dispatched, ids.length, `seed ${seed}: each successful hand-off finished once`)
      const stored = await records(ids)
      t.same(stored.filter((doc) => doc.dispatch_state !== 'done').map((doc) => doc._id), [], `seed ${seed}: every record done`)
      t.same(
        stored.filter((doc) => doc.dispatch_attempts !== executor.calls.get(doc._id)).map((doc) => doc._id),
        [],
        `seed ${seed}: every claim led to one hand-off`,
      )
    }
  })

  t.test('three dispatchers racing over many commands, with failing hand-offs, hand each command over once and never twice at a time', async (t) => {
    const { commands, clock, dispatcher, records } = await world()
    const ids = await accept(commands, 'race', 40, clock.now)
    let calls = 0
    const executor = new SharedExecutor(
      () => ++calls % 7 === 0,
      async (work) => {
        await delay(1) // a hand-off takes a moment: the others run meanwhile
        return work()
      },
    )
    const racing = [dispatcher(executor), dispatcher(executor), dispatcher(executor, { concurrency: 2 })]
    for (let round = 0; round < 20 && executor.handed.size < ids.length; round++) {
      await Promise.all(racing.map((d) => d.drain()))
      clock.now = new Date(clock.now.getTime() + 10_000) // past every backoff so far, within every lease
    }
    t.ok(calls > ids.length, 'some hand-offs failed and were retried')
    t.same([...executor.handed.keys()].sort(), ids, 'every command handed over')
    t.same([...executor.handed.values()].filter((n) => n !== 1), [], 'none twice')
    t.equal(executor.maxOverlap, 1, 'no command in two hand-offs at once')
    t.same((await records(ids)).filter((doc) => doc.dispatch_state !== 'done'), [], 'every record done')
  })

  t.test('commands a dead dispatcher holds do not hide the rest, and are taken over when its leases end', async (t) => {
    const { commands, clock, dispatcher } = await world()
    const orphans = await accept(commands, 'orphan', 20, clock.now)
    // What a dispatcher that died mid-hand-off leaves: claims nobody will finish.
    for (const _ of orphans) t.ok(await commands.dispatch.claimNext(clock.now, LEASE_MS))
    const [fresh] = await accept(commands, 'fresh', 1, clock.now)
    const executor = new SharedExecutor()
    const survivor = dispatcher(executor)
    t.equal(await survivor.drain(), 1)
    t.same([...executor.handed.keys()], [fresh])
    clock.now = new Date(clock.now.getTime() + LEASE_MS - 1)
    t.equal(await survivor.drain(), 0, 'held until the leases end')
    clock.now = new Date(clock.now.getTime() + 1)
    t.equal(await survivor.drain(), orphans.length)
    t.same([...executor.handed.keys()].sort(), [fresh, ...orphans].sort())
  })

  t.test('a dispatcher whose hand-off outlived its lease leaves the command to the one that took it over', async (t) => {
    const { commands, clock, dispatcher, records } = await world()
    const [commandId] = await accept(commands, 'slow', 1, clock.now)
    const gated = new GatedExecutor()
    // One worker: with more, the slow round's next worker is still claiming when the clock moves, and can
    // take the command over itself once its lease ends (a second hand-off of the same dispatcher).
    const slowRound = dispatcher(gated, { concurrency: 1 }).drain()
    await eventually('one hand-off started', () => gated.started.length === 1)
    clock.now = new Date(clock.now.getTime() + LEASE_MS)
    const other = new SharedExecutor()
    t.equal(await dispatcher(other).drain(), 1, 'taken over once the lease ended')
    t.same(gated.started, [commandId], 'the slow dispatcher handed it off once')
    gated.release(true)
    t.equal(await slowRound, 0, 'the late hand-off failed')
    const [stored] = await records([commandId!])
    t.match(stored, { dispatch_state: 'done', dispatch_attempts: 2, dispatch_claim: null }, 'its put-off wrote nothing over the new holder\'s finish')
    t.notOk(stored && 'dispatch_last_error' in stored, 'nor its error')
  })

  t.test('a turn that read the command while its failing hand-off held it does not put the account off until the lease ends', async (t) => {
    const { commands, clock, dispatcher, records } = await world()
    const [commandId] = await accept(commands, 'held', 1, clock.now)
    const executor: SharedExecutor = new SharedExecutor(() => (executor.calls.get(commandId!) ?? 0) <= 1)
    // The first hand-off's put-off waits until a second worker of the same round has ended a turn of the account
    // that found nothing due: that turn read the command while the hand-off held it, due only when its lease ends.
    let otherTurnServed = () => {}
    const served = new Promise<void>((resolve) => (otherTurnServed = resolve))
    const around: Around = async (step, work) => {
      if (step === 'dispatch.putOff') await served
      const result = await work()
      if (step === 'schedule.endEmptyTurn') otherTurnServed()
      return result
    }
    const d = dispatcher(executor, { commands: interleaved(commands, around), backoffMs: () => 1_000 })
    t.equal(await d.drain(), 0, 'the first hand-off fails')
    const [stored] = await records([commandId!])
    t.match(stored, { dispatch_state: 'waiting', dispatch_attempts: 1 })
    t.equal(stored!.dispatch_due_at.getTime(), clock.now.getTime() + 1_000, 'the command is due again after its backoff')
    clock.now = stored!.dispatch_due_at
    t.equal(await d.drain(), 1, 'the retry is handed over when its backoff ends, not when the first lease would have')
    t.match((await records([commandId!]))[0], { dispatch_state: 'done', dispatch_attempts: 2 })
  })

  t.test('a command whose hand-off keeps failing is retried with growing backoff and is never dropped', async (t) => {
    const { commands, clock, dispatcher, records } = await world()
    const [commandId] = await accept(commands, 'flaky', 1, clock.now)
    const executor: SharedExecutor = new SharedExecutor(() => (executor.calls.get(commandId!) ?? 0) <= 3)
    const d = dispatcher(executor, { backoffMs: (n) => n * 1_000 })
    const dueTimes: number[] = []
    for (let attempt = 1; attempt <= 3; attempt++) {
      t.equal(await d.drain(), 0, `attempt ${attempt} fails`)
      const [stored] = await records([commandId!])
      t.match(stored, { dispatch_state: 'waiting', dispatch_attempts: attempt, dispatch_last_error: 'executor unavailable' })
      dueTimes.push(stored!.dispatch_due_at.getTime() - clock.now.getTime())
      clock.now = stored!.dispatch_due_at
    }
    t.same(dueTimes, [1_000, 2_000, 3_000], 'each retry waits what the backoff says for its attempt')
    t.equal(await d.drain(), 1, 'the fourth attempt succeeds')
    t.match((await records([commandId!]))[0], { dispatch_state: 'done', dispatch_attempts: 4 })
  })
})
