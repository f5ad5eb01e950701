/**
 * The child of bench/object-put-cost.ts: a process started with the runner's
 * node flags (contracts/runner-node-flags.ts) that stores a folder of files
 * in one of several ways and reports its own CPU for it. It reads one line a
 * round from stdin, `{"variant", "prefix"}`, and answers one line
 * `{"cpuMs", "wallMs"}`, so the SDK is loaded once and every variant runs
 * warm, in the same process, as the runner's early stores do.
 *
 * Variants (each one PUT per file, UPLOAD_CONCURRENCY at a time):
 *   buffer-signed      the file read whole, SigV4 over a SHA-256 of the body,
 *                      no checksum (what the runner's early stores did until
 *                      2026-11-27);
 *   buffer-unsigned    the file read whole, `UNSIGNED-PAYLOAD` and a CRC32 in
 *                      `x-amz-checksum-crc32` (what upload/lean-requests.ts does,
 *                      told here on its own);
 *   stream             streamed from disk, no checksum (the final upload's
 *                      PUT with requestChecksumCalculation WHEN_REQUIRED);
 *   stream-crc32       streamed from disk with the SDK's default CRC32 trailer
 *                      (aws-chunked, STREAMING-UNSIGNED-PAYLOAD-TRAILER);
 *   sdk-lean           the SDK's PutObject as the runner sent it until
 *                      2026-11-27 evening: `UNSIGNED-PAYLOAD` and a CRC32, the
 *                      logging middleware removed (upload/lean-requests.ts);
 *   runner             the runner's own openStore(...).putBytes (its early
 *                      stores; since 2026-11-27 evening upload/lean-put.ts);
 *   runner-put         the runner's own openStore(...).put (its final upload).
 */
import { createReadStream, readFileSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { PutObjectCommand, S3Client } from '@aws-sdk/client-s3'
import { leanRequests } from '../runner-image/runner/upload/lean-requests.js'
import { openStore } from '../runner-image/runner/upload/s3-upload.js'

const UPLOAD_CONCURRENCY = 4
const dir = process.env.BENCH_DIR as string
const files = (JSON.parse(readFileSync(join(dir, 'files.json'), 'utf8')) as Array<{ name: string; size: number }>)
const s3 = { endpoint: process.env.S3_ENDPOINT as string, bucket: process.env.S3_BUCKET as string, region: process.env.S3_REGION as string }
const credentials = { accessKeyId: process.env.S3_ACCESS_KEY_ID as string, secretAccessKey: process.env.S3_SECRET_ACCESS_KEY as string }

function client(checksums: 'WHEN_REQUIRED' | 'WHEN_SUPPORTED'): S3Client {
  return new S3Client({ endpoint: s3.endpoint, region: s3.region, forcePathStyle: true, credentials, requestChecksumCalculation: checksums })
}
const required = client('WHEN_REQUIRED')
const supported = client('WHEN_SUPPORTED')
// Told here on its own, not through the runner's code, so the variant stays what it says whatever the runner does.
const unsigned = client('WHEN_REQUIRED')
unsigned.middlewareStack.add(
  (next) => (args) => {
    const request = args.request as { headers: Record<string, string> }
    request.headers['x-amz-content-sha256'] = 'UNSIGNED-PAYLOAD'
    return next(args)
  },
  { step: 'build', priority: 'low' },
)

const sdkLean = client('WHEN_REQUIRED')
leanRequests(sdkLean)

async function inParallel(limit: number, work: (file: { name: string; size: number }) => Promise<void>): Promise<void> {
  let next = 0
  await Promise.all(Array.from({ length: limit }, async () => {
    while (next < files.length) await work(files[next++] as { name: string; size: number })
  }))
}

async function store(variant: string, prefix: string): Promise<void> {
  const put = (s3Client: S3Client, key: string, body: Buffer | NodeJS.ReadableStream, size: number, crc32 = false) =>
    s3Client.send(new PutObjectCommand({ Bucket: s3.bucket, Key: key, Body: body as Buffer, ContentLength: size, ...(crc32 ? { ChecksumAlgorithm: 'CRC32' as const } : {}) }))
  switch (variant) {
    case 'buffer-signed':
      return inParallel(UPLOAD_CONCURRENCY, async (file) => void (await put(required, `${prefix}/${file.name}`, await readFile(join(dir, file.name)), file.size)))
    case 'buffer-unsigned':
      return inParallel(UPLOAD_CONCURRENCY, async (file) => void (await put(unsigned, `${prefix}/${file.name}`, await readFile(join(dir, file.name)), file.size, true)))
    case 'sdk-lean':
      return inParallel(UPLOAD_CONCURRENCY, async (file) => void (await put(sdkLean, `${prefix}/${file.name}`, await readFile(join(dir, file.name)), file.size, true)))
    case 'runner':
    case 'runner-put': {
      const runnerStore = await openStore(
        { location: 'INTERNAL', endpoint: s3.endpoint, region: s3.region, bucket: s3.bucket, prefix, forcePathStyle: true, guard: null, credentials: async () => credentials },
        'bench',
      )
      await inParallel(UPLOAD_CONCURRENCY, async (file) => {
        const toUpload = { alias: 'out_x', filename: file.name, path: file.name, contentType: null }
        await (variant === 'runner' ? runnerStore.putBytes(toUpload, await readFile(join(dir, file.name))) : runnerStore.put(dir, toUpload))
      })
      runnerStore.close()
      return
    }
    case 'stream':
      return inParallel(UPLOAD_CONCURRENCY, async (file) => void (await put(required, `${prefix}/${file.name}`, createReadStream(join(dir, file.name), { highWaterMark: 1024 * 1024 }), file.size)))
    case 'stream-crc32':
      return inParallel(UPLOAD_CONCURRENCY, async (file) => void (await put(supported, `${prefix}/${file.name}`, createReadStream(join(dir, file.name), { highWaterMark: 1024 * 1024 }), file.size)))
    default:
      throw new Error(`unknown variant ${variant}`)
  }
}

for await (const line of createInterface({ input: process.stdin })) {
  const { variant, prefix } = JSON.parse(line) as { variant: string; prefix: string }
  const cpu = process.cpuUsage()
  const started = performance.now()
  await store(variant, prefix)
  const used = process.cpuUsage(cpu)
  process.stdout.write(`${JSON.stringify({ cpuMs: (used.user + used.system) / 1000, wallMs: performance.now() - started })}\n`)
}
for (const s3Client of [required, supported, unsigned, sdkLean]) s3Client.destroy()
