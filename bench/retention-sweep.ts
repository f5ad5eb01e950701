/**
 * What the retention sweep's query costs on the embedded store as the live
 * files grow, beside what a client's GET /files costs in the same run.
 *
 *   npm run -s bench -- retention-sweep [--sizes 1000,10000,100000] [--rounds 20]
 *
 * The provisioned FerretDB (ffkube's patches), the repository's own queries
 * (FileRepository#expiredFiles, the sweep's batch of 100; FileRepository#list,
 * an account's newest 50, the baseline), on a `files` collection filled with
 * upload-shaped records over 100 accounts, 1 in 100 of them expired and 1 in 10
 * deleted. The two queries alternate, one of each per round, so load on the
 * machine falls on both alike. The load average is printed with the figures.
 * Bounded: fixed sizes, a fixed number of rounds.
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
import { RETENTION_BATCH } from '../api/files/retention-sweep.js'
import { startLocalMongo } from '../api/local/embedded-mongo.js'
import { percentile } from './table.js'

const NOW = new Date('2026-06-01T00:00:00Z')
const DAY = 86_400_000

/** Files `from` to `to`: live ones expiring after NOW but every 100th before it, every 10th deleted. */
async function fill(files: Collection<FileDocument>, from: number, to: number): Promise<void> {
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
    await files.insertMany(batch)
  }
}

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
    '| files (live / expired) | sweep batch of 100: p50 / p99 ms | GET /files (an account\'s newest 50), baseline: p50 / p99 ms | load average (1 min) at the end |',
    '|---:|---:|---:|---:|',
  ]
  try {
    const db = client.db('retention_bench')
    // Nothing below reaches S3: the queries are the repository's reads of its collection.
    const files = new FileRepository(db, new ManagedStorage(s3, 'unused'), new CommandRepository(db), () => NOW, () => {}, new StorageQuota(db, DEFAULT_STORAGE_QUOTAS, planReader(db)))
    await files.ensureIndexes()
    let stored = 0
    for (const size of sizes) {
      await fill(db.collection<FileDocument>('files'), stored, size)
      stored = size
      const sweep: number[] = []
      const list: number[] = []
      let found = 0
      for (let round = 0; round < rounds; round++) {
        let started = performance.now()
        found = (await files.expiredFiles(NOW, RETENTION_BATCH)).length
        sweep.push(performance.now() - started)
        started = performance.now()
        await files.list(`acc_${round % 100}`, { limit: 50, offset: 0 })
        list.push(performance.now() - started)
      }
      sweep.sort((a, b) => a - b)
      list.sort((a, b) => a - b)
      const live = size - Math.floor((size + 4) / 10)
      lines.push(`| ${size} (${live} / ${found} in a batch) | ${percentile(sweep, 50).toFixed(1)} / ${percentile(sweep, 99).toFixed(1)} | ${percentile(list, 50).toFixed(1)} / ${percentile(list, 99).toFixed(1)} | ${loadavg()[0]!.toFixed(2)} |`)
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
