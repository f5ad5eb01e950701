import { cp } from 'node:fs/promises'
import { join } from 'node:path'
import { MongoClient } from 'mongodb'
import t from 'tap'
import { startLocalMongo } from '../../api/local/embedded-mongo.js'
import { checkoutPath } from '../harness/checkout.js'
import { scratchDir } from '../harness/scratch.js'
import { queryPlan, usesIndex } from './query-plans.js'

/*
 * `npm start` keeps its data under ./.ffkube between runs: a data directory
 * the stock FerretDB 1.24.2 wrote (fixtures/, see its README) must open in the
 * patched build, answer from its existing indexes and take atomic updates.
 */

t.test('a data directory written by the stock build opens and is used as it is', { skip: process.env.MONGODB_URL ? 'about the embedded FerretDB; MONGODB_URL points elsewhere' : false }, async (t) => {
  const dir = await scratchDir(t, 'ffkube-stock-data-')
  await cp(checkoutPath('test', 'store', 'fixtures', 'stock-ferretdb-1.24.2'), join(dir, 'sqlite'), { recursive: true })
  const ferret = await startLocalMongo(dir)
  t.teardown(() => ferret.server.stop())
  const client = await MongoClient.connect(ferret.url)
  t.teardown(() => client.close())
  const commands = client.db('legacy').collection<{ _id: string; key_hash: string; account_id: string; n: number; name: string; runs?: number }>('commands')

  t.equal(await commands.countDocuments(), 30, 'every document is there')
  const one = await commands.findOne({ _id: 'cmd_017' })
  t.equal(one?.name, 'Ünïcødé "quoted" <b>&17', 'strings read back exactly')
  t.equal((await commands.findOne({ key_hash: 'h5' }))?._id, 'cmd_005', 'found by the unique field')
  t.same((await commands.find({ account_id: 'acct_1' }).sort({ n: 1 }).toArray()).map((d) => d.n), [1, 4, 7, 10, 13, 16, 19, 22, 25, 28])

  t.ok(usesIndex(await queryPlan(commands, { _id: 'cmd_017' })), 'the stock _id index serves lookups by _id')
  t.ok(usesIndex(await queryPlan(commands, { key_hash: 'h5' })), 'an index the stock build created serves its field')

  await Promise.all(Array.from({ length: 20 }, () => commands.updateOne({ _id: 'cmd_003' }, { $inc: { runs: 1 } })))
  t.equal((await commands.findOne({ _id: 'cmd_003' }))?.runs, 20, 'increments are atomic on old data')
  await t.rejects(commands.insertOne({ _id: 'cmd_new', key_hash: 'h5', account_id: 'acct_0', n: 99, name: 'dup' }), { code: 11000 }, 'the unique index still holds')

  const oids = await client.db('legacy').collection('oids').find({}).toArray()
  t.equal(oids[0]?._id.toString(), '65a1b2c3d4e5f60718293a4b', 'ObjectId ids read back')
})
