/**
 * How the runner's PUTs are signed and checked (upload/lean-requests.ts,
 * s3-upload.ts): seen on the wire by a loopback proxy between the runner and
 * the real S3 server, which forwards every request unchanged, or with one
 * byte of the body flipped.
 */
import { GetObjectCommand, HeadObjectCommand, S3Client } from '@aws-sdk/client-s3'
import { randomBytes } from 'node:crypto'
import { writeFile } from 'node:fs/promises'
import { createServer, request, type IncomingHttpHeaders } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { crc32 } from 'node:zlib'
import t from 'tap'
import { RunnerFailure } from '../../runner-image/runner/failure.js'
import { leanRequests, SDK_LOGGER_MIDDLEWARE } from '../../runner-image/runner/upload/lean-requests.js'
import { openStore, READ_WHOLE_MAX_BYTES, type FileToUpload } from '../../runner-image/runner/upload/s3-upload.js'
import type { UploadTarget } from '../../runner-image/runner/upload/upload-target.js'
import { startS3, type TestS3 } from '../harness/s3.js'
import { scratchDir, type Teardown } from '../harness/scratch.js'

interface SeenPut {
  path: string
  headers: IncomingHttpHeaders
  bodyLength: number
}

/** A proxy in front of `s3` that records each PUT; with `corrupt`, it flips the first byte of every PUT's body. */
async function proxyTo(t: Teardown, s3: TestS3, corrupt = false): Promise<{ endpoint: string; puts: SeenPut[] }> {
  const upstream = new URL(s3.endpoint)
  const puts: SeenPut[] = []
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => {
      const body = Buffer.concat(chunks)
      if (req.method === 'PUT') {
        puts.push({ path: req.url ?? '', headers: req.headers, bodyLength: body.length })
        if (corrupt && body.length > 0) body[0] = (body[0] as number) ^ 0xff
      }
      const forwarded = request({ host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers }, (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers)
        answer.pipe(res)
      })
      forwarded.on('error', () => res.destroy())
      forwarded.end(body)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()) }))
  return { endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, puts }
}

function managedTarget(s3: TestS3, endpoint: string): UploadTarget {
  return {
    location: 'INTERNAL',
    endpoint,
    region: s3.region,
    bucket: s3.bucket,
    prefix: 'outputs',
    forcePathStyle: true,
    guard: null,
    credentials: async () => ({ accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey }),
  }
}

/** The checksum the store is told, computed here from the bytes the test wrote. */
const crc32Header = (bytes: Buffer) => {
  const sum = Buffer.alloc(4)
  sum.writeUInt32BE(crc32(bytes))
  return sum.toString('base64')
}

t.test('a small file goes up unsigned with a CRC32 of its bytes, early or at the end', async (t) => {
  const s3 = await startS3(t)
  const proxy = await proxyTo(t, s3)
  const store = await openStore(managedTarget(s3, proxy.endpoint), 'cmd-lean')
  t.teardown(() => store.close())
  const work = await scratchDir(t)
  const early = randomBytes(300_000)
  const final = randomBytes(200_000)
  await writeFile(join(work, 'seg_000.ts'), final)
  const file = (filename: string): FileToUpload => ({ alias: 'out_hls', filename, path: filename, contentType: 'video/mp2t' })

  await store.putBytes(file('seg_early.ts'), early)
  await store.put(work, file('seg_000.ts'))

  t.equal(proxy.puts.length, 2)
  for (const [put, bytes] of [[proxy.puts[0], early], [proxy.puts[1], final]] as const) {
    t.equal(put?.headers['x-amz-content-sha256'], 'UNSIGNED-PAYLOAD', `${put?.path} is not hashed for its signature`)
    t.equal(put?.headers['x-amz-checksum-crc32'], crc32Header(bytes), `${put?.path} carries the CRC32 of its bytes`)
    t.match(put?.headers.authorization, /SignedHeaders=[^,]*x-amz-checksum-crc32/, 'the checksum header is signed')
    t.equal(put?.bodyLength, bytes.length, 'sent as is, not aws-chunked')
  }
  const client = s3.client()
  t.teardown(() => client.destroy())
  const stored = await (await client.send(new GetObjectCommand({ Bucket: s3.bucket, Key: 'outputs/cmd-lean/seg_000.ts' }))).Body!.transformToByteArray()
  t.ok(Buffer.from(stored).equals(final), 'the store holds the bytes')
})

t.test('a body changed on the way is refused by the store, and nothing is stored', async (t) => {
  const s3 = await startS3(t)
  const proxy = await proxyTo(t, s3, true)
  const store = await openStore(managedTarget(s3, proxy.endpoint), 'cmd-corrupt')
  t.teardown(() => store.close())
  const file: FileToUpload = { alias: 'out_hls', filename: 'seg_001.ts', path: 'seg_001.ts', contentType: 'video/mp2t' }
  const error = await store.putBytes(file, randomBytes(100_000)).then(() => null, (caught: unknown) => caught)
  t.ok(error instanceof RunnerFailure, 'the PUT fails')
  t.equal((error as RunnerFailure).errorStatus, 'UPLOAD_FAILED', (error as Error).message)
  t.equal(proxy.puts.length >= 1, true, 'the request reached the store')
  const client = s3.client()
  t.teardown(() => client.destroy())
  const head = await client.send(new HeadObjectCommand({ Bucket: s3.bucket, Key: 'outputs/cmd-corrupt/seg_001.ts' })).then(() => 'stored', (caught: unknown) => (caught as Error).name)
  t.equal(head, 'NotFound', 'no object was stored')
})

t.test('a file over the read-whole size is streamed from disk, as before', async (t) => {
  const s3 = await startS3(t)
  const proxy = await proxyTo(t, s3)
  const store = await openStore(managedTarget(s3, proxy.endpoint), 'cmd-big')
  t.teardown(() => store.close())
  const work = await scratchDir(t)
  await writeFile(join(work, 'big.ts'), randomBytes(READ_WHOLE_MAX_BYTES + 1))
  await store.put(work, { alias: 'out_hls', filename: 'big.ts', path: 'big.ts', contentType: null })
  t.equal(proxy.puts.length, 1)
  t.equal(proxy.puts[0]?.bodyLength, READ_WHOLE_MAX_BYTES + 1)
})

t.test('the runner’s S3 client has no SDK logging middleware to build log records nobody reads', async (t) => {
  const client = new S3Client({ region: 'us-east-1' })
  t.teardown(() => client.destroy())
  const named = () => client.middlewareStack.identify().filter((entry) => entry.startsWith(`${SDK_LOGGER_MIDDLEWARE} `))
  // An SDK that renames it fails here, not silently in the runner.
  t.equal(named().length, 1, 'the SDK still names its logging middleware so')
  t.equal(leanRequests(client), true)
  t.same(named(), [])
})
