import { MongoClient, type CommandStartedEvent } from 'mongodb'
import t from 'tap'
import { newCommandDocument, type CommandDocument } from '../../api/commands/command-document.js'
import { CommandRepository } from '../../api/commands/command-repository.js'
import { isDuplicateKey } from '../../api/store-compatibility.js'
import { COMMAND_DRAFT } from '../api/dispatch-fixtures.js'
import { startMongo } from '../harness/mongo.js'

/*
 * Submissions that arrive together are written together (one insert for the
 * batch, one schedule bump per account), and each submitter still learns its
 * own outcome: a refused command fails its own request and no other, and a
 * batch the store or driver refuses whole is answered submitter by submitter.
 */

const T0 = new Date('2026-01-01T00:00:00Z')

function command(id: string, accountId: string, metadata: Record<string, string | number | boolean> | null = null): CommandDocument {
  return newCommandDocument({ ...COMMAND_DRAFT, metadata }, { commandId: id, accountId }, T0)
}

t.test('accepted commands written in batches', async (t) => {
  const mongo = await startMongo(t)
  const client = await MongoClient.connect(mongo.url, { monitorCommands: true })
  t.teardown(() => client.close())
  let databases = 0
  const fresh = async () => {
    const db = client.db(`${mongo.dbName}_${databases++}`)
    const commands = new CommandRepository(db)
    await commands.ensureIndexes()
    return { db, commands }
  }
  /** The commands the store was sent while `work` ran, as `name collection`. */
  const sent = async (work: () => Promise<unknown>): Promise<string[]> => {
    const seen: string[] = []
    const listener = (event: CommandStartedEvent) => void seen.push(`${event.commandName} ${String(event.command[event.commandName])}`)
    client.on('commandStarted', listener)
    try {
      await work()
    } finally {
      client.off('commandStarted', listener)
    }
    return seen
  }

  t.test('thirty submissions of three accounts in one turn land in one insert, each account announced once', async (t) => {
    const { db, commands } = await fresh()
    const accounts = ['acc_a', 'acc_b', 'acc_c']
    const submissions = Array.from({ length: 30 }, (_, i) => [command(`cmd_${i}`, accounts[i % 3]!)])
    const operations = await sent(() => Promise.all(submissions.map((docs) => commands.insert(docs))))
    t.equal(operations.filter((op) => op === 'insert commands').length, 1, 'one insert carried all thirty')
    t.equal(operations.filter((op) => op.endsWith(' dispatch_accounts')).length, 3, 'one schedule write per account')
    const stored = await db.collection<CommandDocument>('commands').find({}, { projection: { _id: 1, account_id: 1 } }).toArray()
    t.same(stored.map((doc) => doc._id).sort(), submissions.map(([doc]) => doc!._id).sort(), 'every command is stored')
    t.same((await commands.schedule.waitingAccounts()).sort(), accounts, 'every account waits for its turn')
  })

  t.test('a command whose id is taken fails its own submission and no other in the batch', async (t) => {
    const { db, commands } = await fresh()
    await commands.insert([command('cmd_taken', 'acc_first', { first: true })])
    const outcomes = await Promise.allSettled([
      commands.insert([command('cmd_1', 'acc_a')]),
      commands.insert([command('cmd_2', 'acc_b'), command('cmd_taken', 'acc_b', { first: false })]),
      commands.insert([command('cmd_3', 'acc_a'), command('cmd_4', 'acc_c')]),
    ])
    t.same(outcomes.map((outcome) => outcome.status), ['fulfilled', 'rejected', 'fulfilled'], 'only the request with the taken id fails')
    const refused = outcomes[1] as PromiseRejectedResult
    t.ok(isDuplicateKey(refused.reason), `the failure says the id is taken (${String(refused.reason)})`)
    const collection = db.collection<CommandDocument>('commands')
    for (const id of ['cmd_1', 'cmd_3', 'cmd_4']) t.ok(await collection.findOne({ _id: id }), `${id} is stored`)
    t.same((await collection.findOne({ _id: 'cmd_taken' }))?.metadata, { first: true }, 'the record that held the id is unchanged')
    t.ok((await commands.schedule.waitingAccounts()).includes('acc_c'), 'the accepted commands\' accounts are announced')
  })

  t.test('a batch refused whole is answered submitter by submitter', async (t) => {
    const { db, commands } = await fresh()
    // Over the 16 MiB document limit: the driver refuses the insert that carries it, whole.
    const oversized = command('cmd_big', 'acc_big', { blob: 'x'.repeat(17 * 1024 * 1024) })
    const outcomes = await Promise.allSettled([
      commands.insert([command('cmd_1', 'acc_a')]),
      commands.insert([oversized]),
      commands.insert([command('cmd_2', 'acc_b')]),
    ])
    t.same(outcomes.map((outcome) => outcome.status), ['fulfilled', 'rejected', 'fulfilled'], 'only the oversized request fails')
    const collection = db.collection<CommandDocument>('commands')
    t.same((await collection.find({}, { projection: { _id: 1 } }).toArray()).map((doc) => doc._id).sort(), ['cmd_1', 'cmd_2'], 'the others are stored, the oversized one is not')
    t.same((await commands.schedule.waitingAccounts()).sort(), ['acc_a', 'acc_b'], 'only the stored commands\' accounts are announced')
  })

  t.test('submissions that arrive while a batch is at the store go in the next one, and all land', async (t) => {
    const { db, commands } = await fresh()
    const first = Array.from({ length: 5 }, (_, i) => commands.insert([command(`early_${i}`, 'acc_a')]))
    // Sent once the first batch is on its way (the writer flushes on the turn after the first submission).
    await new Promise((resolve) => setImmediate(resolve))
    const later = Array.from({ length: 5 }, (_, i) => commands.insert([command(`late_${i}`, 'acc_a')]))
    await Promise.all([...first, ...later])
    t.equal(await db.collection('commands').countDocuments(), 10, 'all ten are stored')
  })
})
