/**
 * What one dispatch claim costs as the backlog grows (run after `npx tsc`:
 * `npm run -s bench -- dispatch-claim [--waiting 1000]`), on the harness's
 * store (the embedded FerretDB, or MONGODB_URL). Account A holds `--waiting`
 * waiting commands, B one. Timed, one at a time, each a median of 20
 * (a claim is followed by putting the command back, so the backlog stays):
 *   - the claim before fair dispatch: the earliest due command of anyone;
 *   - fair dispatch's steps: the turn (a read of the account served longest
 *     ago and the one write that takes its turn and a slot), the check of a
 *     full account's slots, and the claim of that account's earliest due
 *     command, for B (one waiting) and for A (all of them);
 *   - A's claims as the dispatcher makes them (api/dispatcher/due-commands.ts):
 *     the first of a burst is the claim above, the second reads A's due ids
 *     once, the next ones claim by id.
 */
import { parseArgs } from 'node:util'
import { MongoClient } from 'mongodb'
import { newCommandDocument } from '../api/commands/command-document.js'
import { CommandRepository } from '../api/commands/command-repository.js'
import { newSlotHolder } from '../api/dispatcher/account-schedule.js'
import { DueCommands } from '../api/dispatcher/due-commands.js'
import { startMongo } from '../test/harness/mongo.js'
import { percentile } from './table.js'
import { COMMAND_DRAFT } from '../test/api/dispatch-fixtures.js'
import { benchRun } from './bench-run.js'

const { values } = parseArgs({ options: { waiting: { type: 'string', default: '1000' }, rounds: { type: 'string', default: '20' } } })
const WAITING = Number(values.waiting)
const ROUNDS = Number(values.rounds)

const { t, run: runBench } = benchRun()

async function median(work: () => Promise<unknown>): Promise<number> {
  const times: number[] = []
  for (let i = 0; i < ROUNDS; i++) {
    const started = performance.now()
    await work()
    times.push(performance.now() - started)
  }
  return Math.round(percentile(times.sort((a, b) => a - b), 50) * 100) / 100
}

/** A's claims through the dispatcher's hint, each put back: the second (which reads the queue) and the median of those after it. */
async function hintedClaims(commands: CommandRepository, putBack: (claim: Awaited<ReturnType<DueCommands['claim']>>) => Promise<void>, later: () => Date) {
  const due = new DueCommands(commands)
  const times: number[] = []
  for (let i = 0; i < ROUNDS; i++) {
    const started = performance.now()
    await putBack(await due.claim('acc_a', later(), 60_000, 'slot_bench'))
    times.push(performance.now() - started)
  }
  const rest = times.slice(2).sort((a, b) => a - b)
  return { claim_a_hinted_read_ms: Math.round(times[1]! * 100) / 100, claim_a_hinted_next_ms: Math.round(percentile(rest, 50) * 100) / 100 }
}

async function main(): Promise<void> {
  const mongo = await startMongo(t)
  const client = await MongoClient.connect(mongo.url)
  t.teardown(() => client.close())
  const commands = new CommandRepository(client.db(mongo.dbName))
  await commands.ensureIndexes()
  const now = new Date()
  const docs = Array.from({ length: WAITING }, (_, i) => newCommandDocument(COMMAND_DRAFT, { commandId: `a_${String(i).padStart(6, '0')}`, accountId: 'acc_a' }, now))
  for (let i = 0; i < docs.length; i += 500) await commands.insert(docs.slice(i, i + 500))
  await commands.insert([newCommandDocument(COMMAND_DRAFT, { commandId: 'b_000000', accountId: 'acc_b' }, now)])
  const later = () => new Date(Date.now() + 1_000)
  // Each claim is put back at once (due now again, slot released), so every round sees the same backlog.
  const putBack = async (claim: Awaited<ReturnType<typeof commands.dispatch.claimNext>>) => {
    if (claim) await commands.dispatch.putOff(claim, now, { dispatch_slot: null })
  }
  const rows = {
    waiting: WAITING + 1,
    before_any_account_earliest_ms: await median(async () => putBack(await commands.dispatch.claimNext(later(), 60_000))),
    turn_ms: await median(async () => {
      const seen = await commands.schedule.nextDue(later())
      const holder = newSlotHolder(later())
      if (seen && (await commands.schedule.takeTurn(seen, 8, holder))) await commands.schedule.freeSlots(seen._id, [holder.token])
    }),
    full_account_slots_ms: await median(() => commands.slotsHeld(Array.from({ length: 8 }, () => newSlotHolder(later()).token), later())),
    claim_b_one_waiting_ms: await median(async () => putBack(await commands.claimForAccount('acc_b', later(), 60_000, 'slot_bench'))),
    claim_a_all_waiting_ms: await median(async () => putBack(await commands.claimForAccount('acc_a', later(), 60_000, 'slot_bench'))),
    ...(await hintedClaims(commands, putBack, later)),
  }
  process.stdout.write(`${JSON.stringify({ phase: 'one dispatch claim', store: process.env.MONGODB_URL ? 'MONGODB_URL' : 'embedded FerretDB', ...rows })}\n`)
}

void runBench(main)
