import { MongoClient, type Collection } from 'mongodb'
import t from 'tap'
import { WorkList, type Claim, type WorkFields } from '../../api/work-list.js'
import { StoreIndexes } from '../../api/store-indexes.js'
import { startMongo } from '../harness/mongo.js'
import { queryPlan, usesIndex } from './query-plans.js'

/*
 * The claim primitive every work list of the service uses (api/work-list.ts),
 * against the real store: one holder per record whatever the concurrency, a
 * lost lease writes nothing, and nothing waiting is ever dropped.
 */

interface Item {
  _id: string
  kind: string
  job_state: string
  job_due_at: Date
  job_claim: string | null
  job_attempts: number
  result?: string
}

const FIELDS: WorkFields = { state: 'job_state', dueAt: 'job_due_at', claim: 'job_claim', attempts: 'job_attempts' }
const T0 = new Date('2026-01-01T00:00:00Z')
const at = (ms: number): Date => new Date(T0.getTime() + ms)

t.test('a work list on the records it is about', async (t) => {
  const mongo = await startMongo(t)
  // One connection per racer, so the server really sees the claims at once.
  const client = await MongoClient.connect(mongo.url, { maxPoolSize: 20, minPoolSize: 20 })
  t.teardown(() => client.close())
  const db = client.db(mongo.dbName)
  let collections = 0
  async function freshList(): Promise<{ items: Collection<Item>; list: WorkList<Item> }> {
    const items = db.collection<Item>(`items_${collections++}`)
    const list = new WorkList(items, FIELDS)
    await list.ensureIndexes(new StoreIndexes(db))
    return { items, list }
  }
  async function add(items: Collection<Item>, list: WorkList<Item>, id: string, dueAt: Date, kind = 'a'): Promise<void> {
    await items.insertOne({ _id: id, kind, ...list.waiting(dueAt) } as Item)
  }

  t.test('20 racers claiming 30 due records take each record exactly once', async (t) => {
    const { items, list } = await freshList()
    for (let i = 0; i < 30; i++) await add(items, list, `item-${String(i).padStart(2, '0')}`, at(i))
    const taken: string[][] = await Promise.all(
      Array.from({ length: 20 }, async () => {
        const mine: string[] = []
        for (;;) {
          const claim = await list.claimNext(at(1_000), 60_000)
          if (!claim) return mine
          mine.push(claim.doc._id)
        }
      }),
    )
    const all = taken.flat().sort()
    t.equal(all.length, 30, 'thirty claims in all')
    t.equal(new Set(all).size, 30, 'no record claimed twice')
    const stored = await items.find().toArray()
    t.ok(
      stored.every((item) => item.job_attempts === 1 && item.job_claim !== null),
      'each record counts one attempt and holds a token',
    )
  })

  t.test('records are taken in due order, and one not yet due waits', async (t) => {
    const { items, list } = await freshList()
    await add(items, list, 'late', at(500))
    await add(items, list, 'second', at(200))
    await add(items, list, 'first', at(100))
    t.equal((await list.claimNext(at(300), 1_000))?.doc._id, 'first')
    t.equal((await list.claimNext(at(300), 1_000))?.doc._id, 'second')
    t.equal(await list.claimNext(at(300), 1_000), null, 'the record due at 500 is not taken at 300')
    t.same(await list.nextDueAt(), at(500), 'the earliest wait is the late record (the others are leased until 1,300)')
  })

  t.test('a claim filtered on other fields leaves the rest waiting', async (t) => {
    const { items, list } = await freshList()
    await add(items, list, 'x', at(0), 'a')
    await add(items, list, 'y', at(0), 'b')
    const claim = await list.claimNext(at(10), 1_000, { kind: 'b' })
    t.equal(claim?.doc._id, 'y')
    t.equal(await list.claimNext(at(10), 1_000, { kind: 'b' }), null)
    t.equal((await list.claimNext(at(10), 1_000))?.doc._id, 'x')
  })

  t.test('a holder whose lease ran out writes nothing once another took the record over', async (t) => {
    const { items, list } = await freshList()
    await add(items, list, 'job', at(0))
    const first = (await list.claimNext(at(0), 1_000)) as Claim<Item>
    t.equal(await list.claimNext(at(999), 1_000), null, 'held until its lease ends')
    const second = await list.claimNext(at(1_000), 1_000)
    t.ok(second, 'taken over when the lease ended')
    t.equal(second?.doc.job_attempts, 2, 'the takeover counts a second attempt')
    t.equal(await list.finish(first, { result: 'from the first holder' }), false, 'the first holder cannot finish it')
    t.equal(await list.putOff(first, at(50_000)), false, 'nor put it off')
    t.equal(await list.extend(first, at(1_000), 5_000), false, 'nor extend its lease')
    t.equal(await list.finish(second as Claim<Item>, { result: 'from the second holder' }), true)
    const stored = await items.findOne({ _id: 'job' })
    t.equal(stored?.result, 'from the second holder')
    t.equal(stored?.job_state, 'done')
    t.equal(stored?.job_claim, null)
  })

  t.test('a finished record is never claimed again, and a second finish changes nothing', async (t) => {
    const { items, list } = await freshList()
    await add(items, list, 'job', at(0))
    const claim = (await list.claimNext(at(0), 1_000)) as Claim<Item>
    t.equal(await list.finish(claim, { result: 'one' }), true)
    t.equal(await list.finish(claim, { result: 'two' }), false)
    t.equal((await items.findOne({ _id: 'job' }))?.result, 'one')
    t.equal(await list.claimNext(at(10_000_000), 1_000), null)
    t.equal(await list.claimOne('job', at(10_000_000), 1_000), null)
    t.equal(await list.nextDueAt(), null, 'nothing waits')
  })

  t.test('a put-off record is due again at the time given, and no sooner', async (t) => {
    const { items, list } = await freshList()
    await add(items, list, 'job', at(0))
    const claim = (await list.claimNext(at(0), 60_000)) as Claim<Item>
    t.equal(await list.putOff(claim, at(5_000), { result: 'backing off' }), true)
    t.equal(await list.claimNext(at(4_999), 60_000), null)
    const again = await list.claimNext(at(5_000), 60_000)
    t.equal(again?.doc._id, 'job')
    t.equal(again?.doc.result, 'backing off')
    t.equal(again?.doc.job_attempts, 2)
  })

  t.test('an extended lease keeps the record from others past its first end', async (t) => {
    const { items, list } = await freshList()
    await add(items, list, 'job', at(0))
    const claim = (await list.claimNext(at(0), 1_000)) as Claim<Item>
    t.equal(await list.extend(claim, at(900), 1_000), true)
    t.same(claim.leaseUntil, at(1_900))
    t.equal(await list.claimNext(at(1_500), 1_000), null)
    t.ok(await list.claimNext(at(1_900), 1_000))
  })

  t.test('finding what is due reads the waiting records through the index, not the collection', async (t) => {
    const { items, list } = await freshList()
    for (let i = 0; i < 20; i++) await add(items, list, `item-${i}`, at(i))
    const plan = await queryPlan(items, { job_state: 'waiting', job_due_at: { $lte: at(100) } }, { job_due_at: 1, _id: 1 })
    t.ok(usesIndex(plan), `plan: ${plan.join(' | ')}`)
  })

  t.test('claimOne takes a named record only when it is waiting and due', async (t) => {
    const { items, list } = await freshList()
    await add(items, list, 'soon', at(100))
    t.equal(await list.claimOne('soon', at(99), 1_000), null)
    t.equal(await list.claimOne('missing', at(100), 1_000), null)
    const racers = await Promise.all(Array.from({ length: 10 }, () => list.claimOne('soon', at(100), 1_000)))
    t.equal(racers.filter((claim) => claim !== null).length, 1, 'one of ten racers gets it')
  })

  t.test('insertClaimed creates a record held by its creator, once, and it is taken over when the lease ends', async (t) => {
    const { items, list } = await freshList()
    const racers = await Promise.all(Array.from({ length: 10 }, () => list.insertClaimed({ _id: 'job', kind: 'a' }, at(0), 1_000)))
    const held = racers.filter((claim) => claim !== null)
    t.equal(held.length, 1, 'one of ten creators holds it')
    t.equal(await list.claimNext(at(999), 1_000), null, 'held until its lease ends')
    t.equal((await items.findOne({ _id: 'job' }))?.job_attempts, 1, 'its creation counts as the first attempt')
    const second = await list.claimNext(at(1_000), 1_000)
    t.equal(second?.doc.job_attempts, 2, 'taken over when the lease ended')
    t.equal(await list.finish(held[0]!), false, 'the creator cannot finish it any more')
  })

  t.test('finishAll ends many claims in one write and answers for each as finish would', async (t) => {
    const { items, list } = await freshList()
    for (const id of ['a', 'b', 'c']) await add(items, list, id, at(0))
    const a = (await list.claimOne('a', at(0), 1_000)) as Claim<Item>
    const b = (await list.claimOne('b', at(0), 1_000)) as Claim<Item>
    const lost = (await list.claimOne('c', at(0), 1_000)) as Claim<Item>
    const takeover = (await list.claimOne('c', at(1_000), 1_000)) as Claim<Item>
    t.same(await list.finishAll([a, b, lost], { result: 'batch' }), [true, true, false])
    const stored = new Map((await items.find().toArray()).map((doc) => [doc._id, doc]))
    t.match(stored.get('a'), { job_state: 'done', job_claim: null, result: 'batch' })
    t.match(stored.get('b'), { job_state: 'done', job_claim: null, result: 'batch' })
    t.match(stored.get('c'), { job_state: 'waiting', job_claim: takeover.token }, 'the record taken over is left to its new holder')
    t.notOk(stored.get('c')?.result)
    t.same(await list.finishAll([takeover]), [true])
    t.same(await list.finishAll([a], { result: 'again' }), [true], 'a claim that finished its record is answered as having finished it')
    t.equal((await items.findOne({ _id: 'a' }))?.result, 'batch', 'and a second finish changes nothing')
  })
})
