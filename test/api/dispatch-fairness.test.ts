import { setTimeout as delay } from 'node:timers/promises'
import { MongoClient } from 'mongodb'
import t from 'tap'
import type { CommandSpec } from '../../contracts/command-spec.js'
import type { Plan } from '../../api/accounts/plans.js'
import { newCommandDocument, type CommandDocument } from '../../api/commands/command-document.js'
import { CommandRepository } from '../../api/commands/command-repository.js'
import type { ConcurrencyLimits } from '../../api/dispatcher/concurrency-limits.js'
import { Dispatcher, type DispatcherOptions } from '../../api/dispatcher/dispatcher.js'
import { queueDepthByPlan } from '../../api/dispatcher/queue-depth.js'
import { ServiceMetrics } from '../../api/metrics/service-metrics.js'
import type { Executor } from '../../api/executors/executor.js'
import { createLogger } from '../../api/logger.js'
import { eventually } from '../harness/eventually.js'
import { interleaved } from '../harness/interleaved.js'
import { startMongo } from '../harness/mongo.js'
import { seededRandom } from '../harness/random.js'
import { COMMAND_DRAFT, SeededScheduler } from './dispatch-fixtures.js'

/*
 * Fair dispatch on the real store: accounts with waiting commands are served
 * round robin, and an account never has more commands handed to the executor
 * and not ended than its plan allows, whatever several dispatchers do at once
 * and whoever of them dies. Orders of hand-offs are asserted, never times.
 */

const quiet = createLogger('test', 'silent')
const T0 = new Date('2026-01-01T00:00:00Z')
const LEASE_MS = 60_000
const LIMITS: ConcurrencyLimits = { free: 2, trial: 2, growth: 2, business: 2 }

/**
 * An Executor (our own interface) that keeps what it was handed until the
 * test ends it, and records the order of hand-offs and the most commands of
 * one account it held at once.
 */
class HoldingExecutor implements Executor {
  readonly name = 'holding'
  readonly order: string[] = []
  readonly #held = new Map<string, Set<string>>()
  maxHeld = 0

  constructor(private readonly between: <T>(work: () => Promise<T>) => Promise<T> = (work) => work()) {}

  async execute(spec: CommandSpec): Promise<void> {
    await this.between(async () => {
      this.order.push(spec.commandId)
      const held = this.#held.get(spec.accountId) ?? new Set()
      held.add(spec.commandId)
      this.#held.set(spec.accountId, held)
      this.maxHeld = Math.max(this.maxHeld, held.size)
    })
  }

  /** Forgets the command before its record says it ended, so this never counts fewer than the dispatchers see. */
  end(accountId: string, commandId: string): void {
    this.#held.get(accountId)?.delete(commandId)
  }

  held(accountId: string): string[] {
    return [...(this.#held.get(accountId) ?? [])]
  }
}

t.test('fair dispatch', async (t) => {
  const mongo = await startMongo(t)
  const client = await MongoClient.connect(mongo.url, { maxPoolSize: 16 })
  t.teardown(() => client.close())
  let databases = 0
  const world = async () => {
    const db = client.db(`${mongo.dbName}_fair_${databases++}`)
    const commands = new CommandRepository(db)
    await commands.ensureIndexes()
    // Time moves a millisecond per reading, as it does between a real dispatcher's writes.
    let ms = T0.getTime()
    const clock = { now: () => new Date(ms++), advance: (by: number) => void (ms += by) }
    const dispatcher = (executor: Executor, options: Partial<DispatcherOptions> = {}) =>
      new Dispatcher({ commands, executor, logger: quiet, now: clock.now, leaseMs: LEASE_MS, concurrencyLimits: LIMITS, accountPlan: async (): Promise<Plan> => 'free', ...options })
    const accept = async (accountId: string, count: number): Promise<string[]> => {
      const docs = Array.from({ length: count }, (_, i) => newCommandDocument(COMMAND_DRAFT, { commandId: `${accountId}_${String(i).padStart(3, '0')}`, accountId }, clock.now()))
      for (const doc of docs) await commands.insert([doc])
      return docs.map((doc) => doc._id)
    }
    /** What the status projector does when a command ends: its terminal status, written through the repository. */
    const end = async (executor: HoldingExecutor, accountId: string, commandId: string) => {
      executor.end(accountId, commandId)
      const doc = (await db.collection<CommandDocument>('commands').findOne({ _id: commandId }))!
      t.ok(await commands.writeProjection(doc, { status: 'SUCCESS', completed_at: clock.now() }))
    }
    return { db, commands, clock, dispatcher, accept, end }
  }

  t.test('with one account holding a backlog, a command another account submits later is handed off before the backlog drains', async (t) => {
    const { accept, dispatcher } = await world()
    const backlog = await accept('acc_a', 30)
    const [single] = await accept('acc_b', 1)
    const executor = new HoldingExecutor()
    t.equal(await dispatcher(executor, { concurrencyLimits: { free: 0, trial: 0, growth: 0, business: 0 } }).drain(), 31)
    const position = executor.order.indexOf(single!)
    t.ok(position >= 0 && position <= 1, `the single command is among the first two handed off (it was number ${position + 1} of 31)`)
    t.same(
      executor.order.filter((id) => id !== single),
      backlog,
      'the backlog in the order it was accepted',
    )
  })

  t.test('three accounts with backlogs are served in turn, one command each', async (t) => {
    const { accept, dispatcher } = await world()
    const a = await accept('acc_a', 4)
    const b = await accept('acc_b', 4)
    const c = await accept('acc_c', 4)
    const executor = new HoldingExecutor()
    t.equal(await dispatcher(executor, { concurrency: 1, concurrencyLimits: { free: 0, trial: 0, growth: 0, business: 0 } }).drain(), 12)
    t.same(executor.order, [a[0], b[0], c[0], a[1], b[1], c[1], a[2], b[2], c[2], a[3], b[3], c[3]])
  })

  t.test('an account at its limit waits while another account is served, and gets its next slot when one of its commands ends', async (t) => {
    const { accept, dispatcher, end } = await world()
    const a = await accept('acc_a', 5)
    const executor = new HoldingExecutor()
    const d = dispatcher(executor)
    t.equal(await d.drain(), 2, 'two of five: the limit')
    t.same(executor.held('acc_a'), a.slice(0, 2))
    const [b] = await accept('acc_b', 1)
    t.equal(await d.drain(), 1, 'the other account is served')
    t.same(executor.order.at(-1), b)
    await end(executor, 'acc_a', a[0]!)
    t.equal(await d.drain(), 1, 'one slot freed, one more handed off')
    t.same(executor.held('acc_a'), [a[1], a[2]])
  })

  t.test('three dispatchers interleaved in a seeded order never hand one account more commands than its limit', async (t) => {
    for (const seed of [1, 2, 3, 4, 5]) {
      const { accept, commands, dispatcher, end } = await world()
      const a = await accept('acc_a', 8)
      const b = await accept('acc_b', 3)
      const scheduler = new SeededScheduler(seededRandom(seed))
      const executor = new HoldingExecutor((work) => scheduler.step(work))
      const racing = [0, 1, 2].map(() => dispatcher(executor, { commands: interleaved(commands, (_step, work) => scheduler.step(work)) }))
      for (let round = 0; round < 20 && executor.order.length < a.length + b.length; round++) {
        await Promise.all(racing.map((d) => d.drain()))
        // Every command held ends: the next round has slots again.
        for (const account of ['acc_a', 'acc_b']) {
          for (const id of executor.held(account)) await end(executor, account, id)
        }
      }
      t.equal(executor.maxHeld, 2, `seed ${seed}: at most two of an account's commands held at once, and two reached`)
      t.same([...executor.order].sort(), [...a, ...b].sort(), `seed ${seed}: every command handed off`)
      t.equal(new Set(executor.order).size, executor.order.length, `seed ${seed}: none twice`)
    }
  })

  t.test('three dispatchers racing on the real store never hand one account more commands than its limit', async (t) => {
    const { accept, dispatcher, end } = await world()
    const a = await accept('acc_a', 12)
    const executor = new HoldingExecutor(async (work) => {
      await delay(1) // a hand-off takes a moment: the others run meanwhile
      return work()
    })
    const racing = [dispatcher(executor), dispatcher(executor), dispatcher(executor)]
    while (executor.order.length < a.length) {
      const before = executor.order.length
      await Promise.all(racing.map((d) => d.drain()))
      t.ok(executor.held('acc_a').length <= 2, 'within the limit after the round')
      for (const id of executor.held('acc_a')) await end(executor, 'acc_a', id)
      if (executor.order.length === before) break
    }
    t.equal(executor.maxHeld, 2, 'never more than two at once')
    t.same(executor.order, a, 'in the order they were accepted, each once')
  })

  t.test('the slot a crashed dispatcher held is given to the next command when its lease ends', async (t) => {
    const { accept, clock, dispatcher, end } = await world()
    const a = await accept('acc_a', 2)
    const limitOne = { free: 1, trial: 1, growth: 1, business: 1 }
    // A dispatcher that dies right after its claim: its hand-off never answers, so it gives nothing back.
    const dying = new HoldingExecutor(async (work) => {
      await work()
      return new Promise<never>(() => {})
    })
    void dispatcher(dying, { concurrencyLimits: limitOne }).drain()
    await eventually('the dying dispatcher took a command', () => dying.order.length === 1)
    t.same(dying.order, [a[0]], 'the dying dispatcher held the first command')
    const executor = new HoldingExecutor()
    const survivor = dispatcher(executor, { concurrencyLimits: limitOne })
    t.equal(await survivor.drain(), 0, "the held claim fills the account's one slot while its lease runs")
    clock.advance(LEASE_MS)
    t.equal(await survivor.drain(), 1, 'the slot is free when the lease ends')
    t.same(executor.order, [a[1]], 'the next command takes it (the one the dead dispatcher held is due from its lease end on)')
    await end(executor, 'acc_a', a[1]!)
    t.equal(await survivor.drain(), 1)
    t.same(executor.order, [a[1], a[0]], 'then the command the dead dispatcher held')
  })

  t.test('a slot taken by a turn whose dispatcher died before its claim is free again when a claim\'s lease would have ended', async (t) => {
    const { accept, clock, commands, dispatcher } = await world()
    const a = await accept('acc_a', 1)
    const limitOne = { free: 1, trial: 1, growth: 1, business: 1 }
    // The store goes away between the turn (which took the account's one slot) and the claim: that round fails.
    const dying = dispatcher(new HoldingExecutor(), {
      concurrencyLimits: limitOne,
      commands: interleaved(commands, async (step, work) => {
        if (step === 'due.claim') throw new Error('connection lost')
        return work()
      }),
    })
    await t.rejects(dying.drain(), /connection lost/)
    const executor = new HoldingExecutor()
    const survivor = dispatcher(executor, { concurrencyLimits: limitOne })
    t.equal(await survivor.drain(), 0, 'the slot is taken while a claim made in that turn could still be under way')
    clock.advance(LEASE_MS)
    t.equal(await survivor.drain(), 1, 'then it is free')
    t.same(executor.order, a)
  })

  t.test('the metrics show the commands waiting per plan and how long each waited for its hand-off', async (t) => {
    const { accept, commands, dispatcher } = await world()
    await accept('acc_a', 3)
    await accept('acc_b', 2)
    await accept('acc_c', 1)
    const plans: Record<string, Plan> = { acc_a: 'free', acc_b: 'business', acc_c: 'business' }
    const metrics = new ServiceMetrics()
    metrics.readQueueDepthFrom(() => queueDepthByPlan(commands, async (id) => plans[id] ?? null))
    const text = async () => metrics.registry.metrics()
    t.match(await text(), /^ffkube_dispatch_queue_depth\{plan="free"\} 3$/m)
    t.match(await text(), /^ffkube_dispatch_queue_depth\{plan="business"\} 3$/m)
    const executor = new HoldingExecutor()
    t.equal(await dispatcher(executor, { metrics, accountPlan: async (id) => plans[id] ?? null }).drain(), 5, 'two of the free account\'s three wait: its limit')
    t.match(await text(), /^ffkube_dispatch_queue_depth\{plan="free"\} 1$/m)
    t.notMatch(await text(), /plan="business"/, 'a plan with nothing waiting has no series')
    t.match(await text(), /^ffkube_dispatch_wait_seconds_count 5$/m, 'one wait observed per hand-off')
  })
})
