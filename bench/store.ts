/**
 * The embedded store on its own: lookups as a collection grows, and whether
 * concurrent read-modify-write commands lose anything.
 *
 *   npm run -s bench -- store [--sizes 1000,10000,100000] [--stock PATH] [--stock-sizes 1000,10000]
 *
 * Runs the provisioned FerretDB (ffkube's patches) and, with --stock, a
 * FerretDB built without them beside it in the same run (build one with the
 * wrapper in scripts/toolchain/ferretdb and no patches/; it is measured at
 * --stock-sizes with 20 lookups each, as it scans). For each size the
 * collection is filled with command-shaped documents over 100 accounts, then
 * 200 lookups of recent documents are timed one at a time (clients poll what
 * they just submitted): by `_id`, by a unique field, and an account's newest
 * ten. Bounded: the sizes are fixed, every loop has a count.
 */
import { randomBytes } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { MongoClient, type Collection } from 'mongodb'
import { startLocalMongo } from '../api/local/embedded-mongo.js'
import { percentile } from './table.js'

interface Doc {
  _id: string
  key_hash: string
  account_id: string
  status: string
  created_at: Date
  payload: string
}


async function fill(collection: Collection<Doc>, from: number, to: number): Promise<number> {
  const started = performance.now()
  const payload = randomBytes(600).toString('base64') // about the size of a command record
  for (let i = from; i < to; i += 1000) {
    const batch = Array.from({ length: Math.min(1000, to - i) }, (_, k): Doc => {
      const n = i + k
      return { _id: `cmd_${n}`, key_hash: `hash_${n}`, account_id: `acc_${n % 100}`, status: n % 7 ? 'SUCCESS' : 'FAILED', created_at: new Date(1_700_000_000_000 + n * 1000), payload }
    })
    await collection.insertMany(batch)
  }
  return ((to - from) / (performance.now() - started)) * 1000
}

async function timed(count: number, call: (i: number) => Promise<unknown>): Promise<{ p50: number; p99: number }> {
  const samples: number[] = []
  for (let i = 0; i < count; i++) {
    const started = performance.now()
    await call(i)
    samples.push(performance.now() - started)
  }
  samples.sort((a, b) => a - b)
  return { p50: percentile(samples, 50), p99: percentile(samples, 99) }
}

/** 50 clients × 20 `$inc` on one document, and 10 rounds of 20 racers on one conditional claim. */
async function races(client: MongoClient): Promise<{ counted: number; winners: number[] }> {
  const db = client.db('races')
  const counters = db.collection<{ _id: string; n: number }>('counters')
  await counters.insertOne({ _id: 'c', n: 0 })
  await Promise.all(Array.from({ length: 50 }, async () => {
    for (let i = 0; i < 20; i++) await counters.updateOne({ _id: 'c' }, { $inc: { n: 1 } })
  }))
  const counted = (await counters.findOne({ _id: 'c' }))?.n ?? NaN
  const jobs = db.collection<{ _id: string; state: string }>('jobs')
  const winners: number[] = []
  for (let round = 0; round < 10; round++) {
    await jobs.insertOne({ _id: `j${round}`, state: 'QUEUED' })
    const results = await Promise.all(Array.from({ length: 20 }, () => jobs.findOneAndUpdate({ _id: `j${round}`, state: 'QUEUED' }, { $set: { state: 'CLAIMED' } })))
    winners.push(results.filter(Boolean).length)
  }
  return { counted, winners }
}

async function measure(name: string, url: string, sizes: number[], lookups: number): Promise<string[]> {
  const client = await MongoClient.connect(url, { maxPoolSize: 50 })
  const lines: string[] = []
  try {
    const collection = client.db('store_bench').collection<Doc>('commands')
    await collection.createIndex({ key_hash: 1 }, { unique: true })
    await collection.createIndex({ account_id: 1, created_at: -1, _id: -1 })
    let stored = 0
    const first: Record<string, number> = {}
    for (const size of sizes) {
      const insertRate = await fill(collection, stored, size)
      stored = size
      // The newest documents, as clients poll what they just submitted.
      const recent = (i: number) => size - 1 - (i % Math.min(size, 1000))
      const byId = await timed(lookups, (i) => collection.findOne({ _id: `cmd_${recent(i)}` }))
      const byKey = await timed(lookups, (i) => collection.findOne({ key_hash: `hash_${recent(i)}` }))
      const newest = await timed(Math.min(lookups, 50), (i) => collection.find({ account_id: `acc_${i % 100}` }).sort({ created_at: -1, _id: -1 }).limit(10).toArray())
      const ratio = (label: string, value: number) => {
        first[label] ??= value
        return `${(value / first[label]!).toFixed(1)}×`
      }
      lines.push(
        `| ${name} | ${size} | ${byId.p50.toFixed(2)} / ${byId.p99.toFixed(2)} (${ratio('id', byId.p50)}) | ${byKey.p50.toFixed(2)} / ${byKey.p99.toFixed(2)} (${ratio('key', byKey.p50)}) | ${newest.p50.toFixed(1)} / ${newest.p99.toFixed(1)} | ${Math.round(insertRate)} |`,
      )
      process.stderr.write(`${name}: ${size} done\n`)
    }
    const { counted, winners } = await races(client)
    lines.push(`| ${name} | races | 50 × 20 \`$inc\` counted **${counted}** of 1000 | winners per claim round: ${winners.join(', ')} | | |`)
  } finally {
    await client.close()
  }
  return lines
}

function parseSizes(list: string): number[] {
  const sizes = list.split(',').map(Number)
  if (sizes.some((n, i) => !Number.isSafeInteger(n) || n < 1 || (i > 0 && n <= sizes[i - 1]!))) throw new Error(`${list}: sizes are an increasing list of whole numbers`)
  return sizes
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { sizes: { type: 'string', default: '1000,10000,100000' }, stock: { type: 'string' }, 'stock-sizes': { type: 'string', default: '1000,10000' } } })
  const sizes = parseSizes(values.sizes)
  const stockSizes = parseSizes(values['stock-sizes'])
  const dir = await mkdtemp(join(tmpdir(), 'ffkube-store-bench-'))
  const lines = ['| build | documents | findOne by _id p50 / p99 ms (p50 over the smallest size) | findOne by unique field p50 / p99 ms (same) | account\'s newest 10, p50 / p99 ms | inserts/s while filling |', '|---|---:|---:|---:|---:|---:|']
  try {
    const patched = await startLocalMongo(join(dir, 'patched'))
    try {
      lines.push(...(await measure('patched', patched.url, sizes, 200)))
    } finally {
      await patched.server.stop()
    }
    if (values.stock) {
      const stock = await startLocalMongo(join(dir, 'stock'), values.stock)
      try {
        lines.push(...(await measure('stock', stock.url, stockSizes, 20)))
      } finally {
        await stock.server.stop()
      }
    }
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
  console.log(lines.join('\n'))
}

main().catch((err: unknown) => {
  console.error(err)
  process.exit(1)
})
