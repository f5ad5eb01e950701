import { MongoClient } from 'mongodb'
import t from 'tap'
import { StoreIndexes } from '../../api/store-indexes.js'
import { startMongo } from '../harness/mongo.js'
import { queryPlan, usesIndex, usesIndexOn } from './query-plans.js'

/*
 * Indexes declared as equality fields then sort and range fields
 * (api/store-indexes.ts): MongoDB gets them whole; the embedded store, which
 * searches an index by its leading field only (docs/adr/0001), gets that
 * field alone, and a query of the declared shape is still served by it.
 */

t.test('an index of equality, sort and range fields', async (t) => {
  const mongo = await startMongo(t)
  const client = await MongoClient.connect(mongo.url)
  t.teardown(() => client.close())
  const db = client.db(mongo.dbName)
  const embedded = 'ferretdbVersion' in (await db.admin().command({ buildInfo: 1 }))
  const items = db.collection<{ _id: string; owner: string; state: string; at: Date; code: string; region: string }>('items')
  const indexes = new StoreIndexes(db)
  await indexes.ensure(items, { owner: 1, state: 1 }, { at: -1, _id: -1 })
  await indexes.ensure(items, { code: 1, region: 1 }, {}, { unique: true })
  // Several owners, so a scan and a search read different rows.
  for (let i = 0; i < 20; i++) await items.insertOne({ _id: `i${i}`, owner: `o${i % 4}`, state: i < 14 ? 'waiting' : 'done', at: new Date(1_700_000_000_000 + i * 1000), code: `c${i}`, region: 'eu' })

  const keys = Object.fromEntries((await items.indexes()).map((index) => [index.name, index.key]))
  if (embedded) t.same(keys.owner_1, { owner: 1 }, 'the embedded store keeps the leading equality field alone')
  else t.same(keys['owner_1_state_1_at_-1__id_-1'], { owner: 1, state: 1, at: -1, _id: -1 }, 'MongoDB keeps the whole index')
  t.same(keys.code_1_region_1, { code: 1, region: 1 }, 'a unique index keeps every field, on either store')
  await t.rejects(items.insertOne({ _id: 'dup', owner: 'o9', state: 'done', at: new Date(), code: 'c3', region: 'eu' }), 'the unique pair is still refused')
  await items.insertOne({ _id: 'other-region', owner: 'o9', state: 'done', at: new Date(), code: 'c3', region: 'us' })

  const filter = { owner: 'o1', state: 'waiting', at: { $lte: new Date(1_700_000_010_000) } }
  const plan = await queryPlan(items, filter, { at: -1, _id: -1 })
  t.ok(usesIndex(plan), 'the declared query shape is served by an index', { plan })
  t.ok(usesIndexOn(plan, 'owner'), 'by the index on owner', { plan })
  const found = await items.find(filter).sort({ at: -1, _id: -1 }).toArray()
  t.same(
    found.map((item) => item._id),
    ['i9', 'i5', 'i1'],
    "the owner's waiting items up to then, newest first (not i13, later; not i17, done)",
  )
})
