import { MongoClient } from 'mongodb'
import t from 'tap'
import { newCommandDocument } from '../../api/commands/command-document.js'
import { CommandRepository } from '../../api/commands/command-repository.js'
import { DueCommands } from '../../api/dispatcher/due-commands.js'
import { startMongo } from '../harness/mongo.js'
import { COMMAND_DRAFT } from './dispatch-fixtures.js'

/*
 * The dispatcher's hint of an account's due commands, on the real store: one
 * read serves a burst, the order stays first come first served, and whatever
 * the hint says, only a waiting, due command of the account is ever claimed.
 */

const T0 = new Date('2026-01-01T00:00:00Z')
const LEASE_MS = 60_000
const at = (ms: number) => new Date(T0.getTime() + ms)
/** The account slot the claims take (the dispatcher takes one per turn; the hint only passes it on). */
const SLOT = 'slot_1'

t.test('due commands', async (t) => {
  const mongo = await startMongo(t)
  const client = await MongoClient.connect(mongo.url)
  t.teardown(() => client.close())
  let databases = 0

  /** A fresh database; `reads` counts the hint's reads of a queue, through the real repository. */
  const world = async () => {
    const commands = new CommandRepository(client.db(`${mongo.dbName}_${databases++}`))
    await commands.ensureIndexes()
    const reads: string[] = []
    const scans: string[] = []
    const nextDueReads: string[] = []
    const counted = {
      claimOneForAccount: commands.claimOneForAccount.bind(commands),
      nextDueForAccount: (accountId: string) => {
        nextDueReads.push(accountId)
        return commands.nextDueForAccount(accountId)
      },
      claimForAccount: (accountId: string, now: Date, leaseMs: number, slot: string) => {
        scans.push(accountId)
        return commands.claimForAccount(accountId, now, leaseMs, slot)
      },
      dueForAccount: (accountId: string, now: Date, limit: number) => {
        reads.push(accountId)
        return commands.dueForAccount(accountId, now, limit)
      },
    }
    /** Records `count` commands of the account accepted at `now`, ids in acceptance order. */
    const accept = async (accountId: string, prefix: string, count: number, now: Date) => {
      const docs = Array.from({ length: count }, (_, i) => newCommandDocument(COMMAND_DRAFT, { commandId: `${prefix}_${String(i).padStart(3, '0')}`, accountId }, now))
      await commands.insert(docs)
      return docs.map((doc) => doc._id)
    }
    return { commands, reads, scans, nextDueReads, counted, accept }
  }

  t.test("a turn that finds nothing due after reading the queue learns when the account's next command is due from that read", async (t) => {
    const { reads, nextDueReads, counted, accept } = await world()
    await accept('acc_a', 'a', 2, T0)
    const due = new DueCommands(counted)
    t.ok(await due.claim('acc_a', at(1_000), LEASE_MS, SLOT))
    t.ok(await due.claim('acc_a', at(1_000), LEASE_MS, SLOT))
    t.equal(await due.claim('acc_a', at(1_000), LEASE_MS, SLOT), null, 'both are held')
    t.same(reads, ['acc_a', 'acc_a'], 'the empty claim read the queue')
    t.same(await due.nextDueAt('acc_a'), at(1_000 + LEASE_MS), 'due again when the first lease ends')
    t.same(nextDueReads, [], 'from that read, not a second one')
    t.same(await due.nextDueAt('acc_a'), at(1_000 + LEASE_MS), 'asked again: read from the store')
    t.same(nextDueReads, ['acc_a'])
  })

  t.test('a lone claim that finds nothing answers when the next command is due with a read of its own', async (t) => {
    const { nextDueReads, counted } = await world()
    const due = new DueCommands(counted)
    t.equal(await due.claim('acc_none', at(1_000), LEASE_MS, SLOT), null)
    t.equal(await due.nextDueAt('acc_none'), null, 'nothing waits')
    t.same(nextDueReads, ['acc_none'])
  })

  t.test('a lone command is claimed with the one "earliest due" write, as before, and no read', async (t) => {
    const { reads, scans, counted, accept } = await world()
    const [id] = await accept('acc_a', 'a', 1, T0)
    const due = new DueCommands(counted)
    t.equal((await due.claim('acc_a', at(1_000), LEASE_MS, SLOT))?.doc._id, id)
    t.same(scans, ['acc_a'])
    t.same(reads, [], 'no hint is read for an account claimed once')
    t.equal(await due.claim('acc_a', at(1_000), LEASE_MS, SLOT), null, 'the round looks again and finds nothing')
    const [next] = await accept('acc_a', 'b', 1, at(2_000))
    t.equal((await due.claim('acc_a', at(3_000), LEASE_MS, SLOT))?.doc._id, next, 'after an empty claim the next lone command is claimed the plain way again')
    t.same(scans, ['acc_a', 'acc_a'])
  })

  t.test("an account's burst is claimed in acceptance order with one read of its queue", async (t) => {
    const { reads, scans, counted, accept } = await world()
    const ids = await accept('acc_a', 'a', 12, T0)
    const due = new DueCommands(counted)
    const claimed: string[] = []
    for (let i = 0; i < ids.length; i++) claimed.push((await due.claim('acc_a', at(1_000), LEASE_MS, SLOT))!.doc._id)
    t.same(claimed, ids)
    t.same(scans, ['acc_a'], 'the first claim is the plain one')
    t.same(reads, ['acc_a'], 'the second read the queue, once for the rest of the burst')
    t.equal(await due.claim('acc_a', at(1_000), LEASE_MS, SLOT), null, 'nothing is left to claim')
    t.same(reads, ['acc_a', 'acc_a'], 'an exhausted hint reads again before it answers none')
  })

  t.test("a claim takes only the account's own waiting and due commands, whatever the hint held", async (t) => {
    const { commands, reads, counted, accept } = await world()
    const ids = await accept('acc_a', 'a', 7, T0)
    await accept('acc_b', 'b', 2, T0)
    const due = new DueCommands(counted)
    t.equal((await due.claim('acc_a', at(1_000), LEASE_MS, SLOT))?.doc._id, ids[0])
    t.equal((await due.claim('acc_a', at(1_000), LEASE_MS, SLOT))?.doc._id, ids[1], 'the second claim reads the hint')
    // Meanwhile another dispatcher takes the next one, and a third is put off past now.
    const taken = await commands.claimOneForAccount(ids[2]!, 'acc_a', at(1_000), LEASE_MS, SLOT)
    t.equal(taken?.doc._id, ids[2])
    const third = await commands.claimOneForAccount(ids[3]!, 'acc_a', at(1_000), LEASE_MS, SLOT)
    t.ok(third && (await commands.dispatch.putOff(third, at(90_000))))
    const next = await due.claim('acc_a', at(2_000), LEASE_MS, SLOT)
    t.equal(next?.doc._id, ids[4], 'the taken and the put-off commands are passed over')
    t.equal(next?.doc.dispatch_slot, SLOT, 'the claim marks the slot it holds, as the scan did')
    t.equal(next?.doc.account_id, 'acc_a')
    t.same(reads, ['acc_a', 'acc_a'], 'two gone in a row: the queue is read again rather than trusting the hint further')
    t.equal(await commands.claimOneForAccount(ids[5]!, 'acc_b', at(2_000), LEASE_MS, SLOT), null, "a claim for another account never takes this one's command")
  })

  t.test('commands accepted after the read come after every id it returned', async (t) => {
    const { reads, counted, accept } = await world()
    const first = await accept('acc_a', 'early', 3, T0)
    const due = new DueCommands(counted)
    t.equal((await due.claim('acc_a', at(1_000), LEASE_MS, SLOT))?.doc._id, first[0])
    t.equal((await due.claim('acc_a', at(1_000), LEASE_MS, SLOT))?.doc._id, first[1])
    const later = await accept('acc_a', 'late', 2, at(1_500))
    const order: string[] = []
    for (let i = 0; i < 3; i++) order.push((await due.claim('acc_a', at(2_000), LEASE_MS, SLOT))!.doc._id)
    t.same(order, [first[2], later[0], later[1]])
    t.same(reads, ['acc_a', 'acc_a'], 'the late ones were found when the known ids ran out')
  })

  t.test('a read of at most N ids serves N claims, then reads the rest', async (t) => {
    const { reads, counted, accept } = await world()
    const ids = await accept('acc_a', 'a', 7, T0)
    const due = new DueCommands(counted, 3)
    const claimed: string[] = []
    for (let i = 0; i < ids.length; i++) claimed.push((await due.claim('acc_a', at(1_000), LEASE_MS, SLOT))!.doc._id)
    t.same(claimed, ids)
    t.equal(reads.length, 2, 'seven commands: the first alone, then three per read')
  })
})
