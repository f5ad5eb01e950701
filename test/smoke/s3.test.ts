import t from 'tap'
import { createHash, randomBytes } from 'node:crypto'
import { Agent } from 'node:http'
import { Readable } from 'node:stream'
import {
  AbortMultipartUploadCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListMultipartUploadsCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  UploadPartCommand,
} from '@aws-sdk/client-s3'
import { Upload } from '@aws-sdk/lib-storage'
import { getSignedUrl } from '@aws-sdk/s3-request-presigner'
import { type S3ServerKind, startS3 } from '../harness/s3.js'

// What the service asks of an S3 server, on the managed store (versitygw) and on
// the customer's server the destination tests use (MinIO), with the SDK's defaults.
const servers: S3ServerKind[] = ['versitygw', 'minio']

for (const server of servers) {
  t.test(`${server}: puts, heads, gets and deletes an object with the SDK defaults`, async (t) => {
    const s3 = await startS3(t, { server })
    const client = s3.client()
    t.teardown(() => client.destroy())
    const body = randomBytes(256 * 1024)
    const key = 'prefix/cmd_1/out.mp4'

    await client.send(new PutObjectCommand({ Bucket: s3.bucket, Key: key, Body: body, ContentType: 'video/mp4' }))
    const head = await client.send(new HeadObjectCommand({ Bucket: s3.bucket, Key: key }))
    t.equal(head.ContentLength, body.length)
    t.equal(head.ContentType, 'video/mp4')

    const got = await client.send(new GetObjectCommand({ Bucket: s3.bucket, Key: key }))
    const bytes = Buffer.from(await got.Body!.transformToByteArray())
    t.ok(bytes.equals(body), 'the bytes read back are the bytes written, with no aws-chunked framing')

    await client.send(new DeleteObjectCommand({ Bucket: s3.bucket, Key: key }))
    await t.rejects(client.send(new HeadObjectCommand({ Bucket: s3.bucket, Key: key })), { name: 'NotFound' })
  })

  t.test(`${server}: stores a streamed body sent aws-chunked with a CRC32 trailer, as the SDK sends a stream`, async (t) => {
    const s3 = await startS3(t, { server })
    const client = s3.client()
    t.teardown(() => client.destroy())
    const body = randomBytes(100_000)
    const put = await client.send(new PutObjectCommand({ Bucket: s3.bucket, Key: 'streamed.bin', Body: Readable.from([body.subarray(0, 40_000), body.subarray(40_000)]), ContentLength: body.length }))
    t.ok(put.ChecksumCRC32, 'the server answers with the CRC32 it checked')
    const got = await client.send(new GetObjectCommand({ Bucket: s3.bucket, Key: 'streamed.bin' }))
    t.ok(Buffer.from(await got.Body!.transformToByteArray()).equals(body), 'the object holds the payload without the chunk framing')
  })

  t.test(`${server}: takes 30 streamed uploads in a row on kept-alive connections, as the runner stores a folder`, async (t) => {
    const s3 = await startS3(t, { server })
    // The SDK's agent, counting the connections it opens.
    const agent = new Agent({ keepAlive: true })
    let opened = 0
    const createConnection = agent.createConnection.bind(agent)
    agent.createConnection = (...args: Parameters<typeof createConnection>) => {
      opened++
      return createConnection(...args)
    }
    const client = new S3Client({ endpoint: s3.endpoint, region: s3.region, forcePathStyle: true, credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey }, requestHandler: { httpAgent: agent } })
    t.teardown(() => client.destroy())
    // A connection the server leaves unusable after a chunked upload with a trailer shows
    // up on the next request sent on it (versitygw v1.8.0 as published, with --keep-alive:
    // ADR 0007, scripts/toolchain/versitygw/patches).
    const bodies = Array.from({ length: 30 }, () => randomBytes(64 * 1024))
    for (const [i, body] of bodies.entries()) {
      await client.send(new PutObjectCommand({ Bucket: s3.bucket, Key: `cmd_1/hls/seg-${i}.m4s`, Body: Readable.from([body]), ContentLength: body.length }))
    }
    const listed = await client.send(new ListObjectsV2Command({ Bucket: s3.bucket, Prefix: 'cmd_1/hls/' }))
    t.equal(listed.KeyCount, bodies.length, 'every upload was stored')
    t.ok(opened < bodies.length / 2, `${opened} connections for ${bodies.length + 1} requests: the server keeps them open`)
  })

  t.test(`${server}: refuses a body whose CRC32 trailer does not match`, async (t) => {
    const s3 = await startS3(t, { server })
    const client = s3.client()
    t.teardown(() => client.destroy())
    // A checksum the SDK did not compute: the server must check it against the bytes.
    const wrong = Buffer.alloc(4, 0x5a).toString('base64')
    await t.rejects(client.send(new PutObjectCommand({ Bucket: s3.bucket, Key: 'bad.bin', Body: randomBytes(1000), ChecksumCRC32: wrong })))
    await t.rejects(client.send(new HeadObjectCommand({ Bucket: s3.bucket, Key: 'bad.bin' })), { name: 'NotFound' }, 'nothing was stored')
  })

  t.test(`${server}: a multipart upload of 20 MiB with a CRC32 per part reads back whole`, async (t) => {
    const s3 = await startS3(t, { server })
    const client = s3.client()
    t.teardown(() => client.destroy())
    const body = randomBytes(20 * 1024 * 1024)
    await new Upload({ client, params: { Bucket: s3.bucket, Key: 'big/out.mp4', Body: Readable.from([body]), ContentType: 'video/mp4' }, partSize: 8 * 1024 * 1024, queueSize: 2, leavePartsOnError: false }).done()
    const head = await client.send(new HeadObjectCommand({ Bucket: s3.bucket, Key: 'big/out.mp4' }))
    t.equal(head.ContentLength, body.length)
    t.match(head.ETag, /-3"$/, 'three parts were stored as one object')
    const hash = createHash('sha256')
    for await (const chunk of (await client.send(new GetObjectCommand({ Bucket: s3.bucket, Key: 'big/out.mp4' }))).Body as AsyncIterable<Buffer>) hash.update(chunk)
    t.equal(hash.digest('hex'), createHash('sha256').update(body).digest('hex'))
  })

  t.test(`${server}: an aborted multipart upload leaves no upload and no object`, async (t) => {
    const s3 = await startS3(t, { server })
    const client = s3.client()
    t.teardown(() => client.destroy())
    const { UploadId } = await client.send(new CreateMultipartUploadCommand({ Bucket: s3.bucket, Key: 'half/out.mp4' }))
    await client.send(new UploadPartCommand({ Bucket: s3.bucket, Key: 'half/out.mp4', UploadId, PartNumber: 1, Body: randomBytes(5 * 1024 * 1024) }))
    // The key itself as the prefix: MinIO lists an upload for its exact key only, never for a folder prefix.
    const open = await client.send(new ListMultipartUploadsCommand({ Bucket: s3.bucket, Prefix: 'half/out.mp4' }))
    t.same(open.Uploads?.map((u) => u.UploadId), [UploadId], 'the upload is listed while open')
    await client.send(new AbortMultipartUploadCommand({ Bucket: s3.bucket, Key: 'half/out.mp4', UploadId }))
    const after = await client.send(new ListMultipartUploadsCommand({ Bucket: s3.bucket, Prefix: 'half/out.mp4' }))
    t.same(after.Uploads ?? [], [], 'no upload is left')
    await t.rejects(client.send(new HeadObjectCommand({ Bucket: s3.bucket, Key: 'half/out.mp4' })), { name: 'NotFound' })
  })

  t.test(`${server}: lists 250 keys in pages and deletes them in one DeleteObjects`, async (t) => {
    const s3 = await startS3(t, { server })
    const client = s3.client()
    t.teardown(() => client.destroy())
    const keys = Array.from({ length: 250 }, (_, i) => `cmd_1/hls/seg-${String(i).padStart(3, '0')}.ts`)
    for (let i = 0; i < keys.length; i += 25) {
      await Promise.all(keys.slice(i, i + 25).map((Key) => client.send(new PutObjectCommand({ Bucket: s3.bucket, Key, Body: Buffer.from(Key) }))))
    }
    await client.send(new PutObjectCommand({ Bucket: s3.bucket, Key: 'cmd_2/other.ts', Body: 'x' }))
    const listed: string[] = []
    let pages = 0
    let token: string | undefined
    do {
      const page = await client.send(new ListObjectsV2Command({ Bucket: s3.bucket, Prefix: 'cmd_1/', MaxKeys: 100, ContinuationToken: token }))
      listed.push(...(page.Contents ?? []).map((o) => o.Key!))
      token = page.NextContinuationToken
      pages++
    } while (token)
    t.equal(pages, 3, 'three pages of at most 100')
    t.same(listed, keys, 'every key of the prefix once, in order, and no other')
    const result = await client.send(new DeleteObjectsCommand({ Bucket: s3.bucket, Delete: { Objects: [...keys, 'cmd_1/never-stored.ts'].map((Key) => ({ Key })), Quiet: true } }))
    t.same(result.Errors ?? [], [], 'a key already gone counts as deleted')
    const after = await client.send(new ListObjectsV2Command({ Bucket: s3.bucket }))
    t.same(after.Contents?.map((o) => o.Key), ['cmd_2/other.ts'], 'only the other prefix is left')
  })

  t.test(`${server}: a presigned GET serves the object to a plain HTTP client and a tampered one is refused`, async (t) => {
    const s3 = await startS3(t, { server })
    const client = s3.client()
    t.teardown(() => client.destroy())
    const body = randomBytes(10_000)
    await client.send(new PutObjectCommand({ Bucket: s3.bucket, Key: 'cmd_1/hls/seg-000.ts', Body: body, ContentType: 'video/mp2t' }))
    const url = await getSignedUrl(client, new GetObjectCommand({ Bucket: s3.bucket, Key: 'cmd_1/hls/seg-000.ts' }), { expiresIn: 600 })
    const res = await fetch(url)
    t.equal(res.status, 200)
    t.equal(res.headers.get('content-type'), 'video/mp2t')
    t.ok(Buffer.from(await res.arrayBuffer()).equals(body))
    const range = await fetch(url, { headers: { range: 'bytes=100-199' } })
    t.equal(range.status, 206, 'a player can seek with a range')
    t.ok(Buffer.from(await range.arrayBuffer()).equals(body.subarray(100, 200)))
    const other = new URL(url)
    other.pathname = other.pathname.replace('seg-000', 'seg-001')
    t.equal((await fetch(other)).status, 403, 'the signature covers the key')
  })
}
