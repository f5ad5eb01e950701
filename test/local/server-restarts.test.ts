/**
 * The test servers' restart (test/harness/mongo.ts, nats.ts), which the
 * cluster lane's fault set uses: the server comes back on the same address
 * with what it stored, so its clients reconnect to the URL they were given.
 */
import t from 'tap'
import { MongoClient } from 'mongodb'
import { connect } from 'nats'
import { eventually } from '../harness/eventually.js'
import { startMongo } from '../harness/mongo.js'
import { startNats } from '../harness/nats.js'

t.test('a restarted MongoDB-wire server answers on the same URL with the documents written before', async (t) => {
  const mongo = await startMongo(t, { host: '127.0.0.1' })
  const client = new MongoClient(mongo.url, { serverSelectionTimeoutMS: 30_000 })
  t.teardown(() => client.close())
  await client.db(mongo.dbName).collection('kept').insertOne({ _id: 'before' } as never)
  await mongo.restart!()
  const found = await client.db(mongo.dbName).collection('kept').findOne({ _id: 'before' } as never)
  t.same(found, { _id: 'before' }, 'the same client reads it back after the restart')
})

t.test('a restarted NATS server answers on the same URL with its JetStream streams and messages', async (t) => {
  const nats = await startNats(t, { host: '127.0.0.1' })
  const nc = await connect({ servers: nats.url, maxReconnectAttempts: -1, reconnectTimeWait: 100 })
  t.teardown(() => nc.close())
  const jsm = await nc.jetstreamManager()
  await jsm.streams.add({ name: 'KEPT', subjects: ['kept.>'] })
  await nc.jetstream().publish('kept.one', new TextEncoder().encode('before'))
  await nats.restart!()
  // The client reconnects on its own schedule; until it has, a request times out.
  const info = await eventually('the stream, through the reconnected client', () => jsm.streams.info('KEPT').catch(() => undefined), 30_000)
  t.equal(info.state.messages, 1, 'the stream and its message survived, read through the same connection')
})
