import { MongoClient, type CommandStartedEvent } from 'mongodb'
import t from 'tap'
import { newCommandDocument, type CommandDocument } from '../../api/commands/command-document.js'
import { CommandRepository } from '../../api/commands/command-repository.js'
import { COMMAND_DRAFT } from '../api/dispatch-fixtures.js'
import { startMongo } from '../harness/mongo.js'

/*
 * GET /commands/:id reads the store in groups: the GETs that arrive while
 * one read is at the store go out together in the next. Each still gets its
 * own command, only its own account's, and never an answer read before it
 * arrived.
 */

const T0 = new Date('2026-01-01T00:00:00Z')

function command(id: string, accountId: string, metadata: Record<string, string | number | boolean> | null = null): CommandDocument {
  return newCommandDocument({ ...COMMAND_DRAFT, metadata }, { commandId: id, accountId }, T0)
}

t.test('reads of waiting commands for GET', async (t) => {
  const mongo = await startMongo(t)
  const client = await MongoClient.connect(mongo.url, { monitorCommands: true })
  t.teardown(() => client.close())
  let databases = 0
  const fresh = async () => {
    const db = client.db(`${mongo.dbName}_${databases++}`)
    const commands = new CommandRepository(db)
    await commands.ensureIndexes()
    return commands
  }
  /** The round trips reading commands (a find, or the getMore of its cursor) the store was sent while `work` ran. */
  const readsDuring = async (work: () => Promise<unknown>): Promise<number> => {
    let reads = 0
    const listener = (event: CommandStartedEvent) => {
      if (event.command.find === 'commands' || (event.commandName === 'getMore' && event.command.collection === 'commands')) reads++
    }
    client.on('commandStarted', listener)
    try {
      await work()
    } finally {
      client.off('commandStarted', listener)
    }
    return reads
  }

  t.test('twenty GETs of twenty commands that arrive together are answered from one read, each with its own command', async (t) => {
    const commands = await fresh()
    const ids = Array.from({ length: 20 }, (_, i) => `cmd_${i}`)
    await commands.insert(ids.map((id, i) => command(id, 'acc_a', { n: i })))
    let answers: Awaited<ReturnType<CommandRepository['findPollResponse']>>[] = []
    const reads = await readsDuring(async () => {
      answers = await Promise.all(ids.map((id) => commands.findPollResponse('acc_a', id)))
    })
    t.equal(reads, 1, 'one round trip carried all twenty')
    t.same(
      answers.map((answer) => [answer?.command_id, answer?.metadata, answer?.status]),
      ids.map((id, i) => [id, { n: i }, 'QUEUED']),
      'each GET got its own command',
    )
  })

  t.test('a command of another account is not found, though it is read in the same group as its owner\'s GET', async (t) => {
    const commands = await fresh()
    await commands.insert([command('cmd_mine', 'acc_owner'), command('cmd_other', 'acc_owner')])
    const [owner, stranger, strangerOther, missing] = await Promise.all([
      commands.findPollResponse('acc_owner', 'cmd_mine'),
      commands.findPollResponse('acc_stranger', 'cmd_mine'),
      commands.findPollResponse('acc_stranger', 'cmd_other'),
      commands.findPollResponse('acc_owner', 'cmd_missing'),
    ])
    t.equal(owner?.command_id, 'cmd_mine', 'the owner gets its command')
    t.equal(stranger, null, 'another account gets nothing for it')
    t.equal(strangerOther, null, 'nor for the owner\'s other command')
    t.equal(missing, null, 'an id nobody has gets nothing')
  })

  t.test('a GET that arrives after a status write shows it, even while earlier GETs are still being read', async (t) => {
    const commands = await fresh()
    await commands.insert([command('cmd_polled', 'acc_a')])
    for (let round = 1; round <= 10; round++) {
      // Reads kept at the store: GETs sent before the write, not awaited yet.
      const before = Array.from({ length: 20 }, () => commands.findPollResponse('acc_a', 'cmd_polled'))
      const read = await commands.findForProjection('cmd_polled')
      t.ok(read && (await commands.writeProjection(read, { status: 'PROCESSING', progress: round, updated_at: new Date() })), `round ${round}: the status write landed`)
      const after = await Promise.all(Array.from({ length: 20 }, () => commands.findPollResponse('acc_a', 'cmd_polled')))
      t.same(
        after.map((answer) => answer?.progress),
        after.map(() => round),
        `round ${round}: every GET sent after the write shows it`,
      )
      await Promise.all(before)
    }
  })

  t.test('GETs that arrive while a read is at the store all get their answers', async (t) => {
    const commands = await fresh()
    const ids = Array.from({ length: 150 }, (_, i) => `cmd_${i}`)
    await commands.insert(ids.map((id) => command(id, 'acc_a')))
    const first = ids.slice(0, 5).map((id) => commands.findPollResponse('acc_a', id))
    // Sent once the first read is on its way (reads go out on the turn after the first GET); more than one read holds.
    await new Promise((resolve) => setImmediate(resolve))
    const later = ids.slice(5).map((id) => commands.findPollResponse('acc_a', id))
    const answers = await Promise.all([...first, ...later])
    t.same(
      answers.map((answer) => answer?.command_id),
      ids,
      'all 150 answered, each with its own command',
    )
  })
})
