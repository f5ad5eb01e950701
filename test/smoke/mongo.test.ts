import t from 'tap'
import { MongoClient } from 'mongodb'
import { startMongo } from '../harness/mongo.js'

t.test('inserts and finds a document through the official driver', async (t) => {
  const mongo = await startMongo(t)
  const client = await MongoClient.connect(mongo.url)
  t.teardown(() => client.close())
  const hello = await client.db('admin').command({ hello: 1 })
  t.ok(hello.maxWireVersion >= 9, `wire version ${hello.maxWireVersion} is one mongodb 7 speaks`)

  const commands = client.db(mongo.dbName).collection<{ _id: string; status: string; n: number }>('commands')
  await commands.createIndex({ status: 1, n: -1 })
  await commands.insertMany([
    { _id: 'a', status: 'QUEUED', n: 1 },
    { _id: 'b', status: 'SUCCESS', n: 2 },
    { _id: 'c', status: 'QUEUED', n: 3 },
  ])
  const queued = await commands.find({ status: 'QUEUED' }).sort({ n: -1 }).toArray()
  t.same(queued.map((doc) => doc._id), ['c', 'a'])

  // State moves forward only through a filtered update; a second one changes nothing.
  const first = await commands.updateOne({ _id: 'a', status: 'QUEUED' }, { $set: { status: 'PROCESSING' } })
  const again = await commands.updateOne({ _id: 'a', status: 'QUEUED' }, { $set: { status: 'PROCESSING' } })
  t.equal(first.modifiedCount, 1)
  t.equal(again.modifiedCount, 0)

  await t.rejects(commands.insertOne({ _id: 'a', status: 'QUEUED', n: 9 }), { code: 11000 }, 'duplicate _id is refused')
})
