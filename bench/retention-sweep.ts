/**
 * What the retention sweep's queries cost on the embedded store as the live
 * files grow, beside what a client's GET /files costs in the same run, and
 * beside the sweep's query before it named its due days (`expires_at ≤ now`
 * on an index of is_deleted and expires_at, session 13's).
 *
 *   npm run -s bench -- retention-sweep [--sizes 1000,10000,100000] [--rounds 20]
 *
 * The provisioned FerretDB (ffkube's patches), the repository's own queries
 * (FileRepository#expiredFiles: a round of a worker that swept yesterday, its
 * two due days, one batch of 100; a worker's first round, ten years of days
 * in lists of DAYS_PER_QUERY, one batch each; FileRepository#list, an
 * account's newest 50, the baseline), on a `files` collection filled with
 * upload-shaped records over 100 accounts, 1 in 100 of them expired and 1 in
 * 10 deleted. The old query runs on a second database of the same server,
 * filled alike, with its own index. The queries alternate, one of each per
 * round, so load on the machine falls on all alike. The load average is
 * printed with the figures. Bounded: fixed sizes, a fixed number of rounds.
 */
import { planReader } from '../api/accounts/account-repository.js'
import { DEFAULT_STORAGE_QUOTAS, StorageQuota } from '../api/files/storage-quota.js'
import { randomBytes } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { S3Client } from '@aws-sdk/client-s3'
import { MongoClient, type Collection } from 'mongodb'
import { CommandRepository } from '../api/commands/command-repository.js'
import { newPendingFile, type FileDocument } from '../api/files/file-document.js'
import { FileRepository } from '../api/files/file-repository.js'
import { ManagedStorage } from '../api/files/managed-storage.js'
import { DAYS_PER_QUERY, RETENTION_BATCH } from '../api/files/retention-sweep.js'
import { dayLists, dayOf, MAX_RETENTION_DAYS_CEILING } from '../api/files/retention.js'
import { startLocalMongo } from '../api/local/embedded-mongo.js'
import { percentile } from './table.js'

const NOW = new Date('2026-06-01T00:00:00Z')
const DAY = 86_400_000

/** Files `from` to `to`: live ones expiring after NOW but every 100th before it, every 10th deleted. */
async function fill(collections: Collection<FileDocument>[], from: number, to: number): Promise<void> {
  const mime = `application/${randomBytes(4).toString('hex')}`
  for (let i = from; i < to; i += 1000) {
    const batch = Array.from({ length: Math.min(1000, to - i) }, (_, k): FileDocument => {
      const n = i + k
      const stored = new Date(NOW.getTime() - (n % 30) * DAY)
      const file = newPendingFile(
        { fileId: `file_${n}`, accountId: `acc_${n % 100}`, filename: 'clip.mp4', storeType: 'UPLOAD', objectKey: `uploads/acc_${n % 100}/file_${n}/clip.mp4`, originalFileUrl: null, mimeType: mime, expiresAt: new Date(n % 100 === 0 ? NOW.getTime() - DAY : NOW.getTime() + 30 * DAY) },
        stored,
      )
      return { ...file, status: 'STORED', processing_state: 'done', is_deleted: n % 10 === 5, deleted_at: n % 10 === 5 ? stored : null }
    })
    for (const collection of collections) await collection.insertMany(batch.map((doc) => ({ ...doc })))
  }
}

/** Session 13's sweep query, on its own index: live files by the index, the dates compared by the store. */
function oldExpiredFiles(files: Collection<FileDocument>, now: Date, limit: number): Promise<FileDocument[]> {
  return files.find({ is_deleted: false, expires_at: { $lte: now }, storage_location: 'INTERNAL' }).sort({ expires_at: 1, _id: 1 }).limit(limit).toArray()
}

/** Milliseconds `run` takes. */
async function timed(run: () => Promise<unknown>): Promise<number> {
  const started = performance.now()
  await run()
  return performance.now() - started
}

const cell = (ms: number[]) => `${percentile(ms, 50).toFixed(1)} / ${percentile(ms, 99).toFixed(1)}`

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { sizes: { type: 'string', default: '1000,10000,100000' }, rounds: { type: 'string', default: '20' } } })
  const sizes = values.sizes.split(',').map(Number)
  const rounds = Number(values.rounds)
  if (sizes.some((n, i) => !Number.isSafeInteger(n) || n < 1 || (i > 0 && n <= sizes[i - 1]!)) || !Number.isSafeInteger(rounds) || rounds < 1) {
    throw new Error('--sizes is an increasing list of whole numbers, --rounds a whole number')
  }
  const dir = await mkdtemp(join(tmpdir(), 'ffkube-retention-bench-'))
  const mongo = await startLocalMongo(join(dir, 'store'))
  const client = await MongoClient.connect(mongo.url)
  const s3 = new S3Client({ region: 'us-east-1', endpoint: 'http://127.0.0.1:9', credentials: { accessKeyId: 'unused', secretAccessKey: 'unused' } })
  const lines = [
    '| files (live / expired) | sweep batch of 100, two due days: p50 / p99 ms | a worker\'s first round, 3,651 days: p50 / p99 ms | before: `expires_at ≤ now`, batch of 100: p50 / p99 ms | GET /files (an account\'s newest 50), baseline: p50 / p99 ms | load average (1 min) at the end |',
    '|---:|---:|---:|---:|---:|---:|',
  ]
  try {
    const db = client.db('retention_bench')
    const oldDb = client.db('retention_bench_before')
    // Nothing below reaches S3: the queries are the repository's reads of its collection.
    const files = new FileRepository(db, new ManagedStorage(s3, 'unused'), new CommandRepository(db), () => NOW, new StorageQuota(db, DEFAULT_STORAGE_QUOTAS, planReader(db)))
    await files.ensureIndexes()
    const oldFiles = oldDb.collection<FileDocument>('files')
    await oldFiles.createIndex({ account_id: 1, is_deleted: 1, created_at: -1, _id: -1 })
    await oldFiles.createIndex({ is_deleted: 1, expires_at: 1 })
    const dueDays = [dayOf(new Date(NOW.getTime() - DAY)), dayOf(NOW)]
    const firstRound = dayLists(dayOf(new Date(NOW.getTime() - MAX_RETENTION_DAYS_CEILING * DAY)), dayOf(NOW), DAYS_PER_QUERY)
    let stored = 0
    for (const size of sizes) {
      await fill([db.collection<FileDocument>('files'), oldFiles], stored, size)
      stored = size
      const [sweep, first, before, list]: [number[], number[], number[], number[]] = [[], [], [], []]
      let found = 0
      let foundBefore = 0
      for (let round = 0; round < rounds; round++) {
        sweep.push(await timed(async () => (found = (await files.expiredFiles(dueDays, NOW, RETENTION_BATCH)).length)))
        first.push(await timed(async () => { for (const days of firstRound) await files.expiredFiles(days, NOW, RETENTION_BATCH) }))
        before.push(await timed(async () => (foundBefore = (await oldExpiredFiles(oldFiles, NOW, RETENTION_BATCH)).length)))
        list.push(await timed(() => files.list(`acc_${round % 100}`, { limit: 50, offset: 0 })))
      }
      for (const ms of [sweep, first, before, list]) ms.sort((a, b) => a - b)
      if (found !== foundBefore) throw new Error(`the sweep found ${found} files where the old query found ${foundBefore}`)
      const live = size - Math.floor((size + 4) / 10)
      lines.push(`| ${size} (${live} / ${found} in a batch) | ${cell(sweep)} | ${cell(first)} | ${cell(before)} | ${cell(list)} | ${loadavg()[0]!.toFixed(2)} |`)
      process.stderr.write(`retention-sweep: ${size} done\n`)
    }
  } finally {
    s3.destroy()
    await client.close()
    await mongo.server.stop()
    await rm(dir, { recursive: true, force: true })
  }
  console.log(lines.join('\n'))
}

main().catch((err: unknown) => {
  console.error(err)
  process.exit(1)
})
