import { MongoClient } from 'mongodb'
import t from 'tap'
import { startMongo } from '../harness/mongo.js'

/*
 * Read-modify-write commands are atomic per document, as MongoDB promises:
 * the patched FerretDB holds a lock per collection across update,
 * findAndModify and delete (docs/adr/0001-patched-ferretdb.md). Stock FerretDB
 * 1.24 counted 12 of 200 increments and let several racers win one claim.
 */

t.test('concurrent writes lose nothing and claims have one winner', async (t) => {
  const mongo = await startMongo(t)
  // One connection per racer, so the server really sees them at once.
  const client = await MongoClient.connect(mongo.url, { maxPoolSize: 50, minPoolSize: 50 })
  t.teardown(() => client.close())
  const db = client.db(mongo.dbName)

  t.test('50 clients × 20 $inc on one document count 1,000', async (t) => {
    const counters = db.collection<{ _id: string; n: number; by: Record<string, number> }>('counters')
    await counters.insertOne({ _id: 'c', n: 0, by: {} })
    await Promise.all(
      Array.from({ length: 50 }, async (_, client) => {
        for (let i = 0; i < 20; i++) await counters.updateOne({ _id: 'c' }, { $inc: { n: 1, [`by.c${client}`]: 1 } })
      }),
    )
    const counter = await counters.findOne({ _id: 'c' })
    t.equal(counter?.n, 1000)
    t.same(Object.values(counter?.by ?? {}), Array.from({ length: 50 }, () => 20), 'every client counted its own 20')
  })

  t.test('20 racers on one conditional findOneAndUpdate: one winner per round', async (t) => {
    const jobs = db.collection<{ _id: string; state: string; owner?: number }>('jobs')
    for (let round = 0; round < 10; round++) {
      const id = `job-${round}`
      await jobs.insertOne({ _id: id, state: 'QUEUED' })
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, racer) => jobs.findOneAndUpdate({ _id: id, state: 'QUEUED' }, { $set: { state: 'CLAIMED', owner: racer } }, { returnDocument: 'after' })),
      )
      const winners = results.filter((doc) => doc !== null)
      t.equal(winners.length, 1, `round ${round}: one winner`)
      const stored = await jobs.findOne({ _id: id })
      t.equal(stored?.owner, winners[0]?.owner, `round ${round}: the stored owner is the winner`)
    }
  })

  t.test('20 racers on one conditional updateOne: one modifies', async (t) => {
    const jobs = db.collection<{ _id: string; state: string }>('update_claims')
    for (let round = 0; round < 10; round++) {
      const id = `job-${round}`
      await jobs.insertOne({ _id: id, state: 'QUEUED' })
      const results = await Promise.all(Array.from({ length: 20 }, () => jobs.updateOne({ _id: id, state: 'QUEUED' }, { $set: { state: 'RUNNING' } })))
      t.equal(results.reduce((sum, r) => sum + r.modifiedCount, 0), 1, `round ${round}`)
    }
  })

  t.test('a conditional delete racing a state change never deletes the changed document', async (t) => {
    const leases = db.collection<{ _id: string; state: string }>('leases')
    for (let round = 0; round < 10; round++) {
      const id = `lease-${round}`
      await leases.insertOne({ _id: id, state: 'expired' })
      const [renewed, deleted] = await Promise.all([
        leases.updateOne({ _id: id, state: 'expired' }, { $set: { state: 'held' } }),
        leases.deleteOne({ _id: id, state: 'expired' }),
      ])
      // Exactly one of the two saw the expired lease; the survivor is consistent with it.
      t.equal(renewed.modifiedCount + deleted.deletedCount, 1, `round ${round}: one of them won`)
      const left = await leases.findOne({ _id: id })
      t.same(left, renewed.modifiedCount === 1 ? { _id: id, state: 'held' } : null, `round ${round}: what is left`)
    }
  })
})
