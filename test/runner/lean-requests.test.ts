/**
 * How the runner's PUTs are signed, sent and checked (upload/lean-put.ts,
 * upload/lean-requests.ts, s3-upload.ts): seen on the wire by a loopback
 * proxy between the runner and the real S3 server (versitygw, the managed
 * store, and MinIO, playing a customer's), which forwards every request
 * unchanged, or with one byte of the body flipped, or answers the first PUT
 * 503 SlowDown.
 */
import { GetObjectCommand, HeadObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3'
import { randomBytes } from 'node:crypto'
import { writeFile } from 'node:fs/promises'
import { createServer, request, type IncomingHttpHeaders } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { crc32 } from 'node:zlib'
import t from 'tap'
import { RunnerFailure } from '../../runner-image/runner/failure.js'
import { addressOf } from '../../runner-image/runner/upload/lean-put.js'
import { leanRequests, SDK_LOGGER_MIDDLEWARE } from '../../runner-image/runner/upload/lean-requests.js'
import { openStore, READ_WHOLE_MAX_BYTES, type FileToUpload } from '../../runner-image/runner/upload/s3-upload.js'
import type { UploadTarget } from '../../runner-image/runner/upload/upload-target.js'
import { startS3, type S3ServerKind, type TestS3 } from '../harness/s3.js'
import { scratchDir, type Teardown } from '../harness/scratch.js'

interface SeenRequest {
  method: string
  path: string
  headers: IncomingHttpHeaders
  bodyLength: number
}

interface ProxyOptions {
  /** Flip the first byte of every PUT's body. */
  corrupt?: boolean
  /** Answer this many PUTs 503 SlowDown before forwarding any. */
  slowDowns?: number
}

/** A proxy in front of `s3` that records every request it is sent. */
async function proxyTo(t: Teardown, s3: TestS3, options: ProxyOptions = {}): Promise<{ endpoint: string; port: number; requests: SeenRequest[]; puts: () => SeenRequest[] }> {
  const upstream = new URL(s3.endpoint)
  const requests: SeenRequest[] = []
  let slowDowns = options.slowDowns ?? 0
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => {
      const body = Buffer.concat(chunks)
      requests.push({ method: req.method ?? '', path: req.url ?? '', headers: req.headers, bodyLength: body.length })
      if (req.method === 'PUT' && slowDowns > 0) {
        slowDowns--
        res.writeHead(503, { 'content-type': 'application/xml' })
        res.end('<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>')
        return
      }
      if (req.method === 'PUT' && options.corrupt && body.length > 0) body[0] = (body[0] as number) ^ 0xff
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
  const { port } = server.address() as AddressInfo
  return { endpoint: `http://127.0.0.1:${port}`, port, requests, puts: () => requests.filter((seen) => seen.method === 'PUT') }
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

const file = (filename: string): FileToUpload => ({ alias: 'out_hls', filename, path: filename, contentType: 'video/mp2t' })

async function storedBytes(t: Teardown, s3: TestS3, key: string): Promise<Buffer> {
  const client = s3.client()
  t.teardown(() => client.destroy())
  return Buffer.from(await (await client.send(new GetObjectCommand({ Bucket: s3.bucket, Key: key }))).Body!.transformToByteArray())
}

async function headOf(t: Teardown, s3: TestS3, key: string): Promise<string> {
  const client = s3.client()
  t.teardown(() => client.destroy())
  return client.send(new HeadObjectCommand({ Bucket: s3.bucket, Key: key })).then(() => 'stored', (caught: unknown) => (caught as Error).name)
}

for (const server of ['versitygw', 'minio'] as S3ServerKind[]) {
  t.test(`on ${server}`, async (t) => {
    t.test('a small file goes up unsigned with a CRC32 of its bytes, early or at the end', async (t) => {
      const s3 = await startS3(t, { server })
      const proxy = await proxyTo(t, s3)
      const store = await openStore(managedTarget(s3, proxy.endpoint), 'cmd-lean')
      t.teardown(() => store.close())
      const work = await scratchDir(t)
      const early = randomBytes(300_000)
      const final = randomBytes(200_000)
      await writeFile(join(work, 'seg_000.ts'), final)

      await store.putBytes(file('seg_early.ts'), early)
      await store.put(work, file('seg_000.ts'))

      t.equal(proxy.puts().length, 2)
      for (const [put, bytes] of [[proxy.puts()[0], early], [proxy.puts()[1], final]] as const) {
        t.equal(put?.headers['x-amz-content-sha256'], 'UNSIGNED-PAYLOAD', `${put?.path} is not hashed for its signature`)
        t.equal(put?.headers['x-amz-checksum-crc32'], crc32Header(bytes), `${put?.path} carries the CRC32 of its bytes`)
        t.match(put?.headers.authorization, /SignedHeaders=[^,]*x-amz-checksum-crc32/, 'the checksum header is signed')
        t.equal(put?.headers['content-type'], 'video/mp2t', 'with its content type')
        t.equal(put?.bodyLength, bytes.length, 'sent as is, not aws-chunked')
      }
      t.ok((await storedBytes(t, s3, 'outputs/cmd-lean/seg_000.ts')).equals(final), 'the store holds the final upload’s bytes')
      t.ok((await storedBytes(t, s3, 'outputs/cmd-lean/seg_early.ts')).equals(early), 'and the early store’s')
    })

    t.test('a body changed on the way is refused by the store, and nothing is stored', async (t) => {
      const s3 = await startS3(t, { server })
      const proxy = await proxyTo(t, s3, { corrupt: true })
      const store = await openStore(managedTarget(s3, proxy.endpoint), 'cmd-corrupt')
      t.teardown(() => store.close())
      const error = await store.putBytes(file('seg_001.ts'), randomBytes(100_000)).then(() => null, (caught: unknown) => caught)
      t.ok(error instanceof RunnerFailure, 'the PUT fails')
      t.equal((error as RunnerFailure).errorStatus, 'UPLOAD_FAILED', (error as Error).message)
      t.equal(proxy.puts().length, 1, 'the request reached the store, and a refusal is not tried again')
      t.equal(await headOf(t, s3, 'outputs/cmd-corrupt/seg_001.ts'), 'NotFound', 'no object was stored')
    })
  })
}

t.test('the runner sends its small PUTs itself, not through the SDK, and opening its store sends nothing', async (t) => {
  const s3 = await startS3(t)
  const proxy = await proxyTo(t, s3)
  const store = await openStore(managedTarget(s3, proxy.endpoint), 'cmd-own')
  t.teardown(() => store.close())
  t.equal(proxy.requests.length, 0, 'asking the SDK where a PUT goes sends no request')
  const work = await scratchDir(t)
  await writeFile(join(work, 'big.ts'), randomBytes(READ_WHOLE_MAX_BYTES + 1))
  for (let i = 0; i < 3; i++) await store.putBytes(file(`seg_${i}.ts`), randomBytes(50_000))
  // A file over the read-whole size is still streamed by the SDK: what an SDK request looks like on this wire.
  await store.put(work, { alias: 'out_hls', filename: 'big.ts', path: 'big.ts', contentType: null })

  const puts = proxy.puts()
  t.equal(puts.length, 4, 'one request per object')
  for (const put of puts.slice(0, 3)) {
    t.equal(put.headers['amz-sdk-invocation-id'], undefined, `${put.path} carries no SDK invocation id`)
    t.equal(put.headers['x-amz-user-agent'], undefined, `${put.path} carries no SDK user agent`)
    t.equal(put.headers['user-agent'], 'ffkube-runner')
    t.equal(put.path.includes('x-id=PutObject'), false, 'nor the SDK’s operation query')
  }
  t.type(puts[3]?.headers['amz-sdk-invocation-id'], 'string', 'the SDK’s streamed PUT is told apart by the same checks')
  t.equal(puts[3]?.bodyLength, READ_WHOLE_MAX_BYTES + 1)
})

t.test('a key with characters to escape goes to the path the SDK uses for it, and the store files it under that key', async (t) => {
  const s3 = await startS3(t, { server: 'minio' })
  const proxy = await proxyTo(t, s3)
  const store = await openStore(managedTarget(s3, proxy.endpoint), 'cmd-keys')
  t.teardown(() => store.close())
  const sdk = new S3Client({ endpoint: proxy.endpoint, region: s3.region, forcePathStyle: true, credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey } })
  t.teardown(() => sdk.destroy())
  const names = ["a b/ü ñ (1)!'*.ts", 'x+y=z&w;v,u$t@s:r.ts', '720p/seg~_-.000.ts']
  for (const name of names) {
    const bytes = randomBytes(1000)
    await store.putBytes(file(name), bytes)
    await sdk.send(new PutObjectCommand({ Bucket: s3.bucket, Key: `sdk/${name}`, Body: bytes }))
    const [lean, bySdk] = proxy.puts().slice(-2)
    t.equal(lean?.path, `/${s3.bucket}/outputs/cmd-keys/${bySdk?.path.split('?')[0]?.slice(`/${s3.bucket}/sdk/`.length)}`, `${name}: the same escaping as the SDK`)
    t.ok((await storedBytes(t, s3, `outputs/cmd-keys/${name}`)).equals(bytes), `${name}: stored under its key`)
  }
})

t.test('a PUT answered 503 SlowDown is sent again and lands', async (t) => {
  const s3 = await startS3(t)
  const proxy = await proxyTo(t, s3, { slowDowns: 1 })
  const store = await openStore(managedTarget(s3, proxy.endpoint), 'cmd-slow')
  t.teardown(() => store.close())
  const bytes = randomBytes(20_000)
  await store.putBytes(file('seg.ts'), bytes)
  t.equal(proxy.puts().length, 2, 'refused once, then sent again')
  t.ok((await storedBytes(t, s3, 'outputs/cmd-slow/seg.ts')).equals(bytes))
})

t.test('a destination endpoint that resolves to a private address gets no PUT, unless private networks are allowed', async (t) => {
  const s3 = await startS3(t)
  const proxy = await proxyTo(t, s3)
  // localhost goes through DNS (a raw IP would not consult the guard's lookup, and the API refuses raw IP endpoints).
  const destination = (allowPrivateNetworks: boolean): UploadTarget => ({ ...managedTarget(s3, `http://localhost:${proxy.port}`), location: 'EXTERNAL', guard: { allowPrivateNetworks } })
  const guarded = await openStore(destination(false), 'cmd-guard')
  t.teardown(() => guarded.close())
  const error = await guarded.putBytes(file('seg.ts'), randomBytes(1000)).then(() => null, (caught: unknown) => caught)
  t.ok(error instanceof RunnerFailure)
  t.equal((error as RunnerFailure).errorStatus, 'DESTINATION_UPLOAD_FAILED')
  t.match((error as Error).message, /private or reserved address/)
  t.equal(proxy.requests.length, 0, 'nothing reached the endpoint')

  const allowed = await openStore(destination(true), 'cmd-guard')
  t.teardown(() => allowed.close())
  await allowed.putBytes(file('seg.ts'), randomBytes(1000))
  t.equal(proxy.puts().length, 1, 'with ALLOW_PRIVATE_NETWORKS it lands')
  t.equal(proxy.puts()[0]?.headers['user-agent'], 'ffkube-runner', 'by the lean PUT')
})

t.test('a bucket is addressed by S3’s rules: path-style, virtual-hosted, behind a base path, on AWS', async (t) => {
  const credentials = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret' }
  const cases: Array<[string, { endpoint?: string; region: string; forcePathStyle: boolean; bucket: string }, object]> = [
    ['path-style on a custom endpoint', { endpoint: 'http://localhost:9000', region: 'us-east-1', forcePathStyle: true, bucket: 'media' }, { protocol: 'http:', hostname: 'localhost', port: 9000, pathPrefix: '/media/', signingRegion: 'us-east-1' }],
    ['virtual-hosted on https', { endpoint: 'https://s3.example.com', region: 'auto', forcePathStyle: false, bucket: 'media-out' }, { protocol: 'https:', hostname: 'media-out.s3.example.com', pathPrefix: '/', signingRegion: 'auto' }],
    ['path-style behind a base path', { endpoint: 'https://gw.example.com/storage', region: 'eu-west-1', forcePathStyle: true, bucket: 'media' }, { protocol: 'https:', hostname: 'gw.example.com', pathPrefix: '/storage/media/', signingRegion: 'eu-west-1' }],
    ['a dotted bucket on https falls back to path-style', { endpoint: 'https://s3.example.com', region: 'us-east-1', forcePathStyle: false, bucket: 'my.media' }, { protocol: 'https:', hostname: 's3.example.com', pathPrefix: '/my.media/' }],
    ['AWS itself', { region: 'eu-west-3', forcePathStyle: false, bucket: 'media' }, { protocol: 'https:', hostname: 'media.s3.eu-west-3.amazonaws.com', pathPrefix: '/', signingRegion: 'eu-west-3' }],
  ]
  for (const [name, target, expected] of cases) {
    const client = new S3Client({ region: target.region, forcePathStyle: target.forcePathStyle, credentials, ...(target.endpoint ? { endpoint: target.endpoint } : {}) })
    t.match(await addressOf(client, target.bucket), expected, name)
    client.destroy()
  }
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
