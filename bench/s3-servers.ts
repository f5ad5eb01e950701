/**
 * The managed store's candidates side by side (docs/adr/0007-versitygw.md):
 * each S3 server started fresh on loopback, then the same work through
 * @aws-sdk/client-s3 with its default integrity checksums, the servers taken
 * in turn inside each round so that the machine's load falls on all of them:
 *
 *   small-put     200 objects of 64 KiB streamed from memory (aws-chunked with
 *                 a CRC32 trailer, the SDK's default), 12 in flight as the runner
 *   small-put-wr  the same with the runner's client (requestChecksumCalculation
 *                 WHEN_REQUIRED: no trailer), what a multi-file output costs
 *   small-get     the 200 objects read back and compared
 *   list          ListObjectsV2 of all 400, page by page
 *   delete        DeleteObjects of all 400, then a list that must be empty
 *   large-put     one 100 MiB object, multipart (8 MiB parts, 2 in flight, as
 *                 ManagedStorage.upload), CRC32 per part
 *   large-get     read back and hashed
 *   presigned     a presigned GET fetched with plain HTTP, compared
 *
 * For each: wall milliseconds (client's view) and the server's CPU
 * milliseconds (utime + stime of its processes); also its binary size and
 * its RSS once started with one bucket, idle, and at the end.
 *
 *   npm run -s bench -- s3-servers        (BENCH_ROUNDS, default 3;
 *       BENCH_SERVERS, default versitygw,minio; seaweedfs when
 *       BENCH_SEAWEEDFS names a `weed` binary, see the ADR)
 */
import { createHash, randomBytes } from 'node:crypto'
import { readFile, stat, writeFile } from 'node:fs/promises'
import { loadavg } from 'node:os'
import { join } from 'node:path'
import { Readable } from 'node:stream'
import { CreateBucketCommand, DeleteObjectsCommand, GetObjectCommand, ListBucketsCommand, ListObjectsV2Command, PutObjectCommand, S3Client } from '@aws-sdk/client-s3'
import { Upload } from '@aws-sdk/lib-storage'
import { getSignedUrl } from '@aws-sdk/s3-request-presigner'
import { ChildServer } from '../api/local/child-server.js'
import { freePort } from '../api/local/ports.js'
import { toolPath } from '../api/local/tools.js'
import { type LocalS3, type S3RootCredentials, startVersitygw } from '../api/local/versitygw.js'
import { startMinio } from '../test/harness/minio.js'
import { scratchDir } from '../test/harness/scratch.js'
import { benchRun } from './bench-run.js'
import { printTable } from './table.js'

const SMALL_OBJECTS = 200
const SMALL_BYTES = 64 * 1024
const LARGE_BYTES = 100 * 1024 * 1024
const IN_FLIGHT = 12
const PART_BYTES = 8 * 1024 * 1024
const REGION = 'us-east-1'
const TICK_MS = 10 // USER_HZ is 100 on Linux.

interface Candidate {
  name: string
  binary: string
  start(dataDir: string, credentials: S3RootCredentials): Promise<LocalS3>
}

/**
 * SeaweedFS's all-in-one `weed mini` (master, volume, filer and S3 in one
 * process) on free loopback ports, its telemetry off (on by default), with one
 * identity from an S3 config file. Only for this comparison: the bench takes
 * the binary from BENCH_SEAWEEDFS, as nothing else builds it.
 */
function seaweedfs(binary: string): Candidate {
  return {
    name: 'seaweedfs',
    binary,
    async start(dataDir, credentials) {
      const config = join(dataDir, 's3.json')
      const identity = { name: 'ffkube', credentials: [{ accessKey: credentials.accessKeyId, secretKey: credentials.secretAccessKey }], actions: ['Admin', 'Read', 'Write', 'List', 'Tagging'] }
      await writeFile(config, JSON.stringify({ identities: [identity] }))
      const ports: Record<string, number> = {}
      for (const name of ['master.port', 'master.port.grpc', 'volume.port', 'volume.port.grpc', 'filer.port', 'filer.port.grpc', 's3.port', 's3.port.grpc', 'admin.port']) ports[name] = await freePort()
      const server = ChildServer.start({
        name: 'seaweedfs',
        command: binary,
        args: [
          'mini', `-dir=${dataDir}`, '-ip=127.0.0.1', '-ip.bind=127.0.0.1', `-s3.config=${config}`,
          '-webdav=false', '-admin.ui=false', '-master.telemetry=false', '-s3.port.iceberg=0', '-s3.port.lance=0', '-admin.port.legacy=0',
          ...Object.entries(ports).map(([flag, port]) => `-${flag}=${port}`),
        ],
        env: { PATH: process.env.PATH ?? '', HOME: dataDir },
        cwd: dataDir,
      })
      const endpoint = `http://127.0.0.1:${ports['s3.port']}`
      const client = clientOf(endpoint, credentials)
      try {
        await server.waitUntilReady(async () => (await client.send(new ListBucketsCommand({}))).Buckets ?? [], 120_000)
      } finally {
        client.destroy()
      }
      return { endpoint, server }
    },
  }
}

function candidates(): Candidate[] {
  const all: Candidate[] = [
    { name: 'versitygw', binary: toolPath('versitygw'), start: startVersitygw },
    { name: 'minio', binary: toolPath('minio'), start: startMinio },
  ]
  if (process.env.BENCH_SEAWEEDFS) all.push(seaweedfs(process.env.BENCH_SEAWEEDFS))
  const wanted = (process.env.BENCH_SERVERS ?? (process.env.BENCH_SEAWEEDFS ? 'versitygw,minio,seaweedfs' : 'versitygw,minio')).split(',')
  return all.filter((c) => wanted.includes(c.name))
}

function clientOf(endpoint: string, credentials: S3RootCredentials, runnerLike = false): S3Client {
  return new S3Client({ endpoint, region: REGION, forcePathStyle: true, credentials, ...(runnerLike ? { requestChecksumCalculation: 'WHEN_REQUIRED' as const } : {}) })
}

/** The CPU milliseconds used so far by a process and the children it waited for. */
async function cpuMs(pid: number): Promise<number> {
  const fields = (await readFile(`/proc/${pid}/stat`, 'utf8')).split(') ')[1]!.split(' ')
  // After "pid (comm) ": state is field 0, utime 11, stime 12, cutime 13, cstime 14.
  return (Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14])) * TICK_MS
}

async function rssMiB(pid: number, field: 'VmRSS' | 'VmHWM'): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8')
  const kib = Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? NaN)
  return kib / 1024
}

async function inBatches<T>(items: readonly T[], width: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < items.length) await fn(items[next++]!)
  }))
}

async function bytesOf(body: unknown): Promise<Buffer> {
  const chunks: Buffer[] = []
  for await (const chunk of body as AsyncIterable<Buffer>) chunks.push(chunk)
  return Buffer.concat(chunks)
}

interface Running {
  candidate: Candidate
  s3: LocalS3
  credentials: S3RootCredentials
  bucket: string
  pid: number
}

type Step = 'small-put' | 'small-put-wr' | 'small-get' | 'list' | 'delete' | 'large-put' | 'large-get' | 'presigned'
const STEPS: Step[] = ['small-put', 'small-put-wr', 'small-get', 'list', 'delete', 'large-put', 'large-get', 'presigned']

/** One round's work on one server; returns wall and server CPU milliseconds by step. */
async function round(r: Running, index: number, small: Buffer[], large: Buffer): Promise<Record<Step, { wallMs: number; cpuMs: number }>> {
  const client = clientOf(r.s3.endpoint, r.credentials)
  const runnerClient = clientOf(r.s3.endpoint, r.credentials, true)
  const out = {} as Record<Step, { wallMs: number; cpuMs: number }>
  const measure = async (step: Step, fn: () => Promise<void>) => {
    const cpu0 = await cpuMs(r.pid)
    const t0 = performance.now()
    await fn().catch((err: unknown) => {
      throw new Error(`${r.candidate.name}, round ${index + 1}, ${step}: ${err instanceof Error ? err.message : String(err)}`, { cause: err })
    })
    out[step] = { wallMs: performance.now() - t0, cpuMs: (await cpuMs(r.pid)) - cpu0 }
  }
  const keys = small.map((_, i) => `round-${index}/seg-${String(i).padStart(4, '0')}.m4s`)
  const wrKeys = small.map((_, i) => `round-${index}/wr/seg-${String(i).padStart(4, '0')}.m4s`)
  const put = (c: S3Client, key: string, body: Buffer) =>
    c.send(new PutObjectCommand({ Bucket: r.bucket, Key: key, Body: Readable.from([body]), ContentLength: body.length, ContentType: 'video/iso.segment' }))
  try {
    await measure('small-put', () => inBatches(keys.map((k, i) => [k, small[i]!] as const), IN_FLIGHT, async ([k, b]) => void (await put(client, k, b))))
    await measure('small-put-wr', () => inBatches(wrKeys.map((k, i) => [k, small[i]!] as const), IN_FLIGHT, async ([k, b]) => void (await put(runnerClient, k, b))))
    await measure('small-get', () =>
      inBatches(keys.map((k, i) => [k, small[i]!] as const), IN_FLIGHT, async ([k, b]) => {
        const got = await bytesOf((await client.send(new GetObjectCommand({ Bucket: r.bucket, Key: k }))).Body)
        if (!got.equals(b)) throw new Error(`${r.candidate.name}: ${k} read back differs`)
      }),
    )
    let listed: string[] = []
    await measure('list', async () => {
      listed = []
      let token: string | undefined
      do {
        const page = await client.send(new ListObjectsV2Command({ Bucket: r.bucket, Prefix: `round-${index}/`, MaxKeys: 100, ContinuationToken: token }))
        listed.push(...(page.Contents ?? []).map((o) => o.Key!))
        token = page.NextContinuationToken
      } while (token)
    })
    if (listed.length !== keys.length * 2) throw new Error(`${r.candidate.name}: listed ${listed.length} keys, stored ${keys.length * 2}`)
    await measure('delete', async () => {
      const result = await client.send(new DeleteObjectsCommand({ Bucket: r.bucket, Delete: { Objects: listed.map((Key) => ({ Key })), Quiet: true } }))
      if (result.Errors?.length) throw new Error(`${r.candidate.name}: DeleteObjects failed for ${result.Errors.length} keys: ${result.Errors[0]?.Code}`)
    })
    const after = await client.send(new ListObjectsV2Command({ Bucket: r.bucket, Prefix: `round-${index}/` }))
    if ((after.KeyCount ?? 0) !== 0) throw new Error(`${r.candidate.name}: ${after.KeyCount} keys left after DeleteObjects`)
    const largeKey = `round-${index}/large.mp4`
    await measure('large-put', async () => {
      await new Upload({ client, params: { Bucket: r.bucket, Key: largeKey, Body: Readable.from([large]), ContentType: 'video/mp4' }, partSize: PART_BYTES, queueSize: 2, leavePartsOnError: false }).done()
    })
    await measure('large-get', async () => {
      const hash = createHash('sha256')
      for await (const chunk of (await client.send(new GetObjectCommand({ Bucket: r.bucket, Key: largeKey }))).Body as AsyncIterable<Buffer>) hash.update(chunk)
      if (hash.digest('hex') !== createHash('sha256').update(large).digest('hex')) throw new Error(`${r.candidate.name}: the large object read back differs`)
    })
    await put(client, keys[0]!, small[0]!)
    await measure('presigned', async () => {
      const url = await getSignedUrl(client, new GetObjectCommand({ Bucket: r.bucket, Key: keys[0]! }), { expiresIn: 300 })
      const res = await fetch(url)
      if (!res.ok || !Buffer.from(await res.arrayBuffer()).equals(small[0]!)) throw new Error(`${r.candidate.name}: presigned GET answered ${res.status}`)
    })
    await client.send(new DeleteObjectsCommand({ Bucket: r.bucket, Delete: { Objects: [{ Key: largeKey }, { Key: keys[0]! }], Quiet: true } }))
  } finally {
    client.destroy()
    runnerClient.destroy()
  }
  return out
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]!

const bench = benchRun()
await bench.run(async () => {
  const rounds = Number(process.env.BENCH_ROUNDS ?? 3)
  const load = () => loadavg().map((l) => l.toFixed(1)).join(' ')
  console.log(`s3-servers: ${rounds} rounds, load at start ${load()}`)
  const small = Array.from({ length: SMALL_OBJECTS }, () => randomBytes(SMALL_BYTES))
  const large = randomBytes(LARGE_BYTES)
  const running: Running[] = []
  const facts: Array<[string, string, string]> = []
  for (const candidate of candidates()) {
    const credentials = { accessKeyId: `bench${randomBytes(6).toString('hex')}`, secretAccessKey: randomBytes(24).toString('hex') }
    const t0 = performance.now()
    const s3 = await candidate.start(await scratchDir(bench.t, `ffkube-bench-${candidate.name}-`), credentials)
    bench.t.teardown(() => s3.server.stop())
    const client = clientOf(s3.endpoint, credentials)
    await client.send(new CreateBucketCommand({ Bucket: 'bench' }))
    client.destroy()
    const startMs = performance.now() - t0
    const pid = s3.server.pid!
    const { size } = await stat(candidate.binary)
    facts.push([`${candidate.name} binary MiB`, (size / 2 ** 20).toFixed(1), ''])
    facts.push([`${candidate.name} start + bucket ms`, startMs.toFixed(0), ''])
    facts.push([`${candidate.name} RSS idle MiB`, (await rssMiB(pid, 'VmRSS')).toFixed(1), ''])
    running.push({ candidate, s3, credentials, bucket: 'bench', pid })
  }
  const samples = new Map<string, Record<Step, { wallMs: number; cpuMs: number }>[]>()
  for (let i = 0; i < rounds; i++) {
    // Rotate the order each round, so no server always runs first or last.
    const order = running.map((_, j) => running[(i + j) % running.length]!)
    for (const r of order) {
      const result = await round(r, i, small, large)
      samples.set(r.candidate.name, [...(samples.get(r.candidate.name) ?? []), result])
      console.log(`round ${i + 1} ${r.candidate.name}: ${STEPS.map((s) => `${s} ${result[s].wallMs.toFixed(0)}/${result[s].cpuMs}`).join(', ')} (wall/cpu ms; load ${load()})`)
    }
  }
  for (const r of running) facts.push([`${r.candidate.name} RSS peak MiB`, (await rssMiB(r.pid, 'VmHWM')).toFixed(1), ''])
  const rows: Array<[string, string, string]> = []
  for (const step of STEPS) {
    for (const r of running) {
      const list = samples.get(r.candidate.name) ?? []
      rows.push([`${step} ${r.candidate.name} wall ms | cpu ms`, `${median(list.map((s) => s[step].wallMs)).toFixed(0)} | ${median(list.map((s) => s[step].cpuMs)).toFixed(0)}`, 'median'])
    }
  }
  for (const r of running) {
    const list = samples.get(r.candidate.name) ?? []
    rows.push([`${r.candidate.name} server CPU ms per small PUT (runner's client)`, (median(list.map((s) => s['small-put-wr'].cpuMs)) / SMALL_OBJECTS).toFixed(2), ''])
  }
  printTable([...facts, ...rows])
  console.log(`load at end ${load()}`)
})
