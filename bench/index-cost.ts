/**
 * The embedded store's CPU per write of a command, by the commands
 * collection's index set: this tree's (StoreIndexes: equality fields only on
 * the embedded store) beside a baseline tree's, in one FerretDB, alternated
 * round by round so load hits both.
 *
 *   npm run -s bench -- index-cost --baseline DIR [--rounds 4] [--inserts 3000] [--updates 800]
 *
 * --baseline DIR: another built checkout (its dist/); its CommandRepository
 * creates the indexes of the `baseline` variant. Each variant gets a fresh
 * database, its repository's ensureIndexes(), 1,000 commands over 100
 * accounts, then: inserts of command records in batches of 10 (4 writers, as
 * the group commit of submits sends them); updates by `_id` that set the
 * fields a run's progress sets, and that move a command's status (an indexed
 * field); an account's newest ten of one status (GET /commands?status=). The
 * figure is FerretDB's CPU (utime + stime from /proc) per operation: it
 * survives load, wall time does not. The load average is printed with every row.
 */
import { randomUUID } from 'node:crypto'
import { readFile, mkdtemp, rm } from 'node:fs/promises'
import { loadavg, tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { MongoClient, type Db } from 'mongodb'
import { startLocalMongo } from '../api/local/embedded-mongo.js'
import { CommandRepository } from '../api/commands/command-repository.js'
import { newCommandDocument, type CommandDocument } from '../api/commands/command-document.js'
import { COMMAND_DRAFT } from '../test/api/dispatch-fixtures.js'

type EnsureIndexes = (db: Db) => Promise<void>

const TICK_MS = 10 // USER_HZ is 100 on Linux.

async function cpuMs(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8')
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return (Number(fields[11]) + Number(fields[12])) * TICK_MS
}

const load = (): string =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')

const LIMITS = { maxRunSeconds: 3600, vcpuMillis: 2000, memoryMib: 8192, maxOutputFiles: 1000 }

function command(): CommandDocument {
  return newCommandDocument({ ...COMMAND_DRAFT, metadata: { bench: true } }, { commandId: randomUUID(), accountId: `acc_${Math.floor(Math.random() * 100)}`, limits: LIMITS }, new Date())
}

/** Runs `count` calls of `call` over `writers` concurrent loops; the store's CPU per call. */
async function perOperation(pid: number, count: number, writers: number, call: (i: number) => Promise<unknown>): Promise<number> {
  const before = await cpuMs(pid)
  let next = 0
  await Promise.all(
    Array.from({ length: writers }, async () => {
      while (next < count) await call(next++)
    }),
  )
  return ((await cpuMs(pid)) - before) / count
}

async function indexedFields(db: Db): Promise<number> {
  const indexes = await db.collection('commands').indexes()
  return indexes.reduce((sum, index) => sum + Object.keys(index.key).length, 0)
}

async function measure(pid: number, db: Db, ensure: EnsureIndexes, inserts: number, updates: number): Promise<Record<string, number>> {
  await ensure(db)
  const commands = db.collection<CommandDocument>('commands')
  for (let i = 0; i < 100; i++) await commands.insertMany(Array.from({ length: 10 }, command))
  const insert = (await perOperation(pid, inserts / 10, 4, () => commands.insertMany(Array.from({ length: 10 }, command)))) / 10
  const ids = (await commands.find({}, { projection: { _id: 1 } }).limit(updates).toArray()).map((doc) => doc._id)
  const progress = await perOperation(pid, updates, 4, (i) => commands.updateOne({ _id: ids[i % ids.length]! }, { $set: { updated_at: new Date(), run_progress: i } }))
  const status = await perOperation(pid, updates, 4, (i) =>
    commands.updateOne({ _id: ids[i % ids.length]!, status: 'QUEUED' }, { $set: { status: 'PROCESSING', updated_at: new Date() } }),
  )
  const list = await perOperation(pid, 200, 4, (i) =>
    commands
      .find({ account_id: `acc_${i % 100}`, status: 'PROCESSING' })
      .sort({ created_at: -1, _id: -1 })
      .limit(10)
      .toArray(),
  )
  return { fields: await indexedFields(db), insert, progress, status, list }
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { baseline: { type: 'string' }, rounds: { type: 'string', default: '4' }, inserts: { type: 'string', default: '3000' }, updates: { type: 'string', default: '800' } } })
  if (!values.baseline) throw new Error('--baseline DIR (a built checkout to compare with) is required')
  const baseline = (await import(join(resolve(values.baseline), 'dist/api/commands/command-repository.js'))) as { CommandRepository: typeof CommandRepository }
  const variants: Record<string, EnsureIndexes> = {
    baseline: (db) => new baseline.CommandRepository(db).ensureIndexes(),
    this: (db) => new CommandRepository(db).ensureIndexes(),
  }
  const dir = await mkdtemp(join(tmpdir(), 'ffkube-index-cost-'))
  const mongo = await startLocalMongo(dir)
  const client = await MongoClient.connect(mongo.url)
  const pid = mongo.server.pid
  try {
    if (pid === undefined) throw new Error('the embedded store has no process id to read its CPU from')
    process.stdout.write(`FerretDB CPU ms per operation on commands (inserts ${values.inserts}, updates ${values.updates} each); load at start ${load()}\n`)
    process.stdout.write('| round | variant | indexed fields | insert | update (progress) | update (status) | list of 10 by status | load (1, 5, 15 min) |\n|---|---|---:|---:|---:|---:|---:|---|\n')
    const names = Object.keys(variants)
    for (let round = 0; round < Number(values.rounds); round++) {
      for (const name of round % 2 ? [...names].reverse() : names) {
        const row = await measure(pid, client.db(`index_cost_${name}_${round}`), variants[name]!, Number(values.inserts), Number(values.updates))
        process.stdout.write(`| ${round} | ${name} | ${row.fields} | ${row.insert!.toFixed(3)} | ${row.progress!.toFixed(3)} | ${row.status!.toFixed(3)} | ${row.list!.toFixed(3)} | ${load()} |\n`)
      }
    }
  } finally {
    await client.close()
    await mongo.server.stop()
    await rm(dir, { recursive: true, force: true })
  }
}

await main()
