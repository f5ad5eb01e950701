import t from 'tap'
import { randomBytes } from 'node:crypto'
import { DeleteObjectCommand, GetObjectCommand, HeadObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3'
import { startS3 } from '../harness/s3.js'

t.test('puts, heads, gets and deletes an object with the SDK defaults', async (t) => {
  const s3 = await startS3(t)
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
