import { setTimeout as delay } from 'node:timers/promises'
import { MongoClient, type Collection, type Db } from 'mongodb'
import t from 'tap'
import type { CommandSpec } from '../../contracts/command-spec.js'
import { Dispatcher } from '../../api/dispatcher/dispatcher.js'
import type { Executor } from '../../api/executors/executor.js'
import { createLogger } from '../../api/logger.js'
import { startApi } from '../harness/api.js'
import { submit, until } from './dispatch-fixtures.js'

/**
 * An Executor (our own interface) shared by several dispatchers: counts each
 * command's successful hand-offs and the most hand-offs of one command in
 * flight at once, and fails every `failEvery`-th call.
 */
class SharedExecutor implements Executor {
  readonly name = 'shared'
  readonly handed = new Map<string, number>()
  readonly #active = new Map<string, number>()
  maxOverlap = 0
  calls = 0
  constructor(private readonly failEvery = 0) {}
  async execute(spec: CommandSpec): Promise<void> {
    this.calls += 1
    const active = (this.#active.get(spec.commandId) ?? 0) + 1
    this.#active.set(spec.commandId, active)
    this.maxOverlap = Math.max(this.maxOverlap, active)
    try {
      await delay(1) // a hand-off takes a moment: the others run meanwhile
      if (this.failEvery > 0 && this.calls % this.failEvery === 0) throw new Error('executor unavailable')
      this.handed.set(spec.commandId, (this.handed.get(spec.commandId) ?? 0) + 1)
    } finally {
      this.#active.set(spec.commandId, active - 1)
    }
  }
}

const quiet = createLogger('test', 'silent')

/** `db`, except that each read of the dispatch queue waits for `hold()` before it returns: a dispatcher that reads and then stalls. */
function stallingQueueReads(db: Db, hold: () => Promise<void>): Db {
  const stalling = (collection: Collection) =>
    new Proxy(collection, {
      get(target, prop) {
        const value = Reflect.get(target, prop, target) as unknown
        if (prop !== 'find' || typeof value !== 'function') return typeof value === 'function' ? value.bind(target) : value
        return (...args: Parameters<Collection['find']>) => {
          const cursor = target.find(...args)
          const toArray = cursor.toArray.bind(cursor)
          cursor.toArray = async () => {
            const docs = await toArray()
            await hold()
            return docs
          }
          return cursor
        }
      },
    })
  return new Proxy(db, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target) as unknown
      if (prop !== 'collection') return typeof value === 'function' ? value.bind(target) : value
      return (name: string) => (name === 'dispatch_queue' ? stalling(target.collection(name)) : target.collection(name))
    },
  })
}

t.test('dispatch claims', async (t) => {
  let now = new Date('2026-01-01T00:00:00Z')
  const clock = () => now
  const api = await startApi(t, { clock })
  const { api_key } = await api.createAccount('business')
  const commands = api.db.collection('commands')
  const queue = api.db.collection('dispatch_queue')
  const leases = api.db.collection('dispatch_leases')
  const dispatcher = (executor: Executor, options: { db?: Db; leaseMs?: number; concurrency?: number } = {}) =>
    new Dispatcher({ db: api.db, executor, logger: quiet, now: clock, backoffMs: (n) => n * 1_000, leaseMs: 60_000, ...options })

  /** A dispatcher's round that has read its candidate and stalls until release(): its executor and its drain(). */
  const stalledRound = async () => {
    let release = () => {}
    const gate = new Promise<void>((resolve) => (release = resolve))
    let stalled = false
    const slow = new SharedExecutor()
    const lateRound = dispatcher(slow, { db: stallingQueueReads(api.db, async () => ((stalled = true), await gate)) }).drain()
    await until(() => stalled)
    return { slow, lateRound, release }
  }

  t.test('three dispatchers racing over many commands, with failing hand-offs, hand each command over once and never twice at a time', async (t) => {
    const ids = await submit(api, api_key, 60)
    const executor = new SharedExecutor(7)
    const racing = [dispatcher(executor), dispatcher(executor), dispatcher(executor, { concurrency: 2 })]
    for (let round = 0; round < 20 && executor.handed.size < ids.length; round++) {
      await Promise.all(racing.map((d) => d.drain()))
      now = new Date(now.getTime() + 10_000) // past every backoff so far, within every lease
    }
    t.ok(executor.calls > ids.length, 'some hand-offs failed and were retried')
    t.same([...executor.handed.keys()].sort(), [...ids].sort(), 'every command handed over')
    t.same([...executor.handed.values()].filter((n) => n !== 1), [], 'none twice')
    t.equal(executor.maxOverlap, 1, 'no command in two hand-offs at once')
    t.equal(await queue.countDocuments(), 0)
    t.equal(await commands.countDocuments({ 'dispatch.state': 'pending' }), 0)
  })

  t.test('a candidate read before another dispatcher handed the command off is not handed off again', async (t) => {
    const [commandId] = await submit(api, api_key)
    const { slow, lateRound, release } = await stalledRound()
    const fast = new SharedExecutor()
    t.equal(await dispatcher(fast).drain(), 1, 'the other dispatcher hands it off meanwhile')
    release()
    t.equal(await lateRound, 0)
    t.equal(slow.calls, 0, 'the stale candidate met the finished attempt\'s lease')
    t.same([...fast.handed.keys()], [commandId])
  })

  t.test('a candidate that stalled past its lease and the pruning of its leases is re-read, not trusted', async (t) => {
    const [commandId] = await submit(api, api_key)
    const { slow, lateRound, release } = await stalledRound()
    const fast = dispatcher(new SharedExecutor())
    t.equal(await fast.drain(), 1)
    now = new Date(now.getTime() + 4 * 60_000)
    await fast.recover()
    t.equal(await leases.countDocuments({ command_id: commandId }), 0, 'its leases are pruned')
    release()
    t.equal(await lateRound, 0)
    t.equal(slow.calls, 0)
  })

  t.test('entries a dead dispatcher holds do not hide the rest of the queue, and are taken over when their leases end', async (t) => {
    const orphans = await submit(api, api_key, 20)
    // More than one due query's worth, each held by a lease nobody will finish.
    await leases.insertMany(orphans.map((id) => ({ _id: `${id}:0` as never, command_id: id, expires_at: new Date(now.getTime() + 60_000) })))
    const [fresh] = await submit(api, api_key)
    const executor = new SharedExecutor()
    const survivor = dispatcher(executor)
    t.equal(await survivor.drain(), 1)
    t.same([...executor.handed.keys()], [fresh])
    t.equal(await survivor.drain(), 0, 'the held ones are not tried again before their leases end')
    now = new Date(now.getTime() + 60_000)
    t.equal(await survivor.drain(), orphans.length)
    t.equal(executor.handed.size, orphans.length + 1)
    t.equal(await commands.countDocuments({ 'dispatch.state': 'pending' }), 0)
  })

  t.test('the recovery scan prunes the leases of commands long gone from the queue and keeps the others', async (t) => {
    const [done, failing] = await submit(api, api_key, 2)
    let calls = 0
    const executor: Executor = {
      name: 'fails-one',
      execute: async (spec) => {
        calls += 1
        if (spec.commandId === failing) throw new Error('executor unavailable')
      },
    }
    const d = dispatcher(executor)
    await d.drain()
    t.equal(calls, 2)
    t.equal(await leases.countDocuments({ command_id: { $in: [done, failing] } }), 2)
    // Its lease ended a minute after the hand-off.
    now = new Date(now.getTime() + 3 * 60_000)
    await d.recover()
    t.equal(await leases.countDocuments({ command_id: done }), 1, 'kept for twice the lease after it ended')
    now = new Date(now.getTime() + 1)
    await d.recover()
    t.equal(await leases.countDocuments({ command_id: done }), 0, 'pruned after')
    t.equal(await leases.countDocuments({ command_id: failing }), 1, 'kept while its command is queued')
    t.equal(await d.drain(), 0, 'its retry fails again')
    await queue.deleteOne({ _id: failing as never })
  })

  t.test('a command\'s leases are pruned together, so a stale candidate still meets the last one', async (t) => {
    const [commandId] = await submit(api, api_key)
    // A dead holder's lease that has just ended: the hand-off takes over with a successor, a minute newer.
    await leases.insertOne({ _id: `${commandId}:0` as never, command_id: commandId, expires_at: new Date(now.getTime() - 1) })
    const d = dispatcher(new SharedExecutor())
    t.equal(await d.drain(), 1)
    now = new Date(now.getTime() + 150_000) // the dead lease is past the grace, its successor is not
    await d.recover()
    t.equal(await leases.countDocuments({ command_id: commandId }), 2, 'both kept')
    now = new Date(now.getTime() + 60_000)
    await d.recover()
    t.equal(await leases.countDocuments({ command_id: commandId }), 0, 'both pruned')
  })

  t.test('a first hand-off costs a lease insert, a claim mark and the entry\'s removal, with one due query per batch', async (t) => {
    const ids = await submit(api, api_key, 20)
    const counted = await MongoClient.connect(api.mongo.url, { monitorCommands: true })
    t.teardown(() => counted.close())
    const operations: Record<string, number> = {}
    counted.on('commandStarted', (event) => {
      const collection = event.command[event.commandName] as unknown
      const key = `${event.commandName} ${typeof collection === 'string' ? collection : '-'}`
      operations[key] = (operations[key] ?? 0) + 1
    })
    const executor = new SharedExecutor()
    t.equal(await dispatcher(executor, { db: counted.db(api.mongo.dbName) }).drain(), ids.length)
    // 20 due entries, 16 per query (4 × concurrency): a full batch, then a short one that ends the round.
    t.same(operations, { 'find dispatch_queue': 2, 'insert dispatch_leases': 20, 'update commands': 20, 'delete dispatch_queue': 20 })
  })
})
