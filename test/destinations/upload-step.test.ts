/**
 * The runner's upload (phase 3) against a real S3 server playing a customer's
 * bucket: the key layout, multipart uploads, what a failure leaves behind,
 * and how a failure is told.
 */
import { createHash, randomBytes } from 'node:crypto'
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { Readable } from 'node:stream'
import { GetObjectCommand, HeadObjectCommand, ListMultipartUploadsCommand, ListObjectsV2Command } from '@aws-sdk/client-s3'
import t from 'tap'
import type { CommandSpec, StorageDestinationSpec } from '../../contracts/command-spec.js'
import { readRunnerConfig } from '../../runner-image/runner/config.js'
import { RunnerFailure } from '../../runner-image/runner/failure.js'
import { objectKey } from '../../contracts/object-keys.js'
import { putObject, uploadOutputs } from '../../runner-image/runner/upload/s3-upload.js'
import { uploadTargetFor } from '../../runner-image/runner/upload/upload-target.js'
import { startS3 } from '../harness/s3.js'
import { scratchDir } from '../harness/scratch.js'

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex')

t.test('the upload phase writes to a storage destination', async (t) => {
  const customer = await startS3(t, { server: 'minio' })
  const bucket = await customer.createBucket('customer-out')
  const client = customer.client()
  t.teardown(() => client.destroy())
  const workDir = await scratchDir(t)
  await mkdir(join(workDir, 'outputs'))
  const credentials = { accessKeyId: customer.accessKeyId, secretAccessKey: customer.secretAccessKey }
  const destination: StorageDestinationSpec = {
    id: `sd_${'a'.repeat(32)}`,
    // Raw IPs are refused for destinations; the runner reaches the customer's MinIO by name like a customer endpoint.
    endpointUrl: customer.endpoint.replace('127.0.0.1', 'localhost'),
    region: customer.region,
    bucket,
    prefix: 'tenant/exports',
    pathStyle: true,
    publicBaseUrl: null,
  }
  const spec = (commandId: string, overrides: Partial<StorageDestinationSpec> = {}): CommandSpec => ({
    commandId,
    accountId: 'acc_1',
    commandType: 'FFMPEG_COMMAND',
    inputFiles: {},
    outputFiles: {},
    ffmpegCommands: [],
    ytdlp: null,
    storageDestinationId: destination.id,
    storageDestination: { ...destination, ...overrides },
    submittedAt: new Date().toISOString(),
  })
  const open = readRunnerConfig({ ALLOW_PRIVATE_NETWORKS: '1' })
  const strict = readRunnerConfig({})

  t.test('puts each output at {prefix}/{command_id}/{filename}, multipart when large, with the right bytes', async (t) => {
    const big = randomBytes(20 * 1024 * 1024 + 123)
    const small = Buffer.from('hello')
    await writeFile(join(workDir, 'outputs', 'big.mp4'), big)
    await writeFile(join(workDir, 'outputs', 'note.txt'), small)
    const target = uploadTargetFor(spec('cmd-1'), open, {}, credentials)
    t.equal(target.location, 'EXTERNAL')
    const keys = await uploadOutputs(target, 'cmd-1', workDir, [
      { alias: 'out_big', filename: 'big.mp4', path: 'outputs/big.mp4', contentType: 'video/mp4' },
      { alias: 'out_note', filename: 'note.txt', path: 'outputs/note.txt', contentType: null },
    ])
    t.same(keys, { 'big.mp4': 'tenant/exports/cmd-1/big.mp4', 'note.txt': 'tenant/exports/cmd-1/note.txt' })
    const got = await client.send(new GetObjectCommand({ Bucket: bucket, Key: keys['big.mp4'] }))
    t.equal(sha256(Buffer.from(await got.Body!.transformToByteArray())), sha256(big), 'the large object has the file’s bytes')
    t.equal(got.ContentType, 'video/mp4')
    // S3 ETags of multipart objects end in -<parts>.
    t.match(got.ETag, /-3"$/, 'the 20 MiB file went up in three 8 MiB parts')
    const note = await client.send(new GetObjectCommand({ Bucket: bucket, Key: keys['note.txt'] }))
    t.equal(await note.Body!.transformToString(), 'hello')
  })

  t.test('an empty prefix puts outputs at {command_id}/{filename}', async (t) => {
    t.equal(objectKey('', 'cmd-2', 'a.mp4'), 'cmd-2/a.mp4')
    t.equal(objectKey('/x/y/', 'cmd-2', 'a.mp4'), 'x/y/cmd-2/a.mp4')
  })

  t.test('a multipart upload that fails midway is aborted: no object and no parts are left', async (t) => {
    const key = 'tenant/exports/cmd-3/broken.mp4'
    let sent = 0
    const failing = new Readable({
      read() {
        // Two 5 MiB parts go out, then the source fails, as a disk read error would.
        if (sent < 2) {
          sent += 1
          this.push(randomBytes(5 * 1024 * 1024))
        } else {
          this.destroy(new Error('disk read failed'))
        }
      },
    })
    await t.rejects(putObject(client, { bucket, key, body: failing, contentType: null }, 5 * 1024 * 1024), /disk read failed/)
    await t.rejects(client.send(new HeadObjectCommand({ Bucket: bucket, Key: key })), { name: 'NotFound' })
    // The key itself as the prefix: MinIO lists an upload for its exact key only, never for a folder prefix.
    const uploads = await client.send(new ListMultipartUploadsCommand({ Bucket: bucket, Prefix: key }))
    t.equal(uploads.Uploads?.length ?? 0, 0, 'the multipart upload was aborted')
  })

  t.test('wrong credentials fail with DESTINATION_UPLOAD_FAILED and a message without secrets', async (t) => {
    await writeFile(join(workDir, 'outputs', 'x.mp4'), randomBytes(1000))
    const wrong = { accessKeyId: customer.accessKeyId, secretAccessKey: 'not-the-secret-0123456789' }
    const error = await uploadOutputs(uploadTargetFor(spec('cmd-4'), open, {}, wrong), 'cmd-4', workDir, [
      { alias: 'out_x', filename: 'x.mp4', path: 'outputs/x.mp4', contentType: null },
    ]).catch((e: unknown) => e)
    t.ok(error instanceof RunnerFailure)
    t.equal((error as RunnerFailure).errorStatus, 'DESTINATION_UPLOAD_FAILED')
    t.equal((error as RunnerFailure).message, 'upload of x.mp4 to the storage destination failed: SignatureDoesNotMatch')
    const listed = await client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: 'tenant/exports/cmd-4/' }))
    t.equal(listed.KeyCount ?? 0, 0, 'nothing was written')
  })

  t.test('a destination on loopback is refused by the private-network guard without ALLOW_PRIVATE_NETWORKS', async (t) => {
    const error = await uploadOutputs(uploadTargetFor(spec('cmd-5'), strict, {}, credentials), 'cmd-5', workDir, [
      { alias: 'out_x', filename: 'x.mp4', path: 'outputs/x.mp4', contentType: null },
    ]).catch((e: unknown) => e)
    t.equal((error as RunnerFailure).errorStatus, 'DESTINATION_UPLOAD_FAILED')
    t.equal((error as RunnerFailure).message, 'upload of x.mp4 to the storage destination failed: the endpoint resolves to a private or reserved address')
  })

  t.test('without held credentials the target reads FFKUBE_DESTINATION_CREDENTIALS_FILE, and only when the upload starts', async (t) => {
    const dir = await scratchDir(t)
    const file = join(dir, 'credentials.json')
    const target = uploadTargetFor(spec('cmd-6'), open, { FFKUBE_DESTINATION_CREDENTIALS_FILE: file })
    // Written after the target is built: nothing was read yet.
    await writeFile(file, JSON.stringify(credentials))
    const keys = await uploadOutputs(target, 'cmd-6', workDir, [{ alias: 'out_x', filename: 'x.mp4', path: 'outputs/x.mp4', contentType: null }])
    t.same(keys, { 'x.mp4': 'tenant/exports/cmd-6/x.mp4' })
    await client.send(new HeadObjectCommand({ Bucket: bucket, Key: keys['x.mp4'] }))
  })

  t.test('with no credentials at all an external upload fails instead of using the runner’s own', async (t) => {
    const target = uploadTargetFor(spec('cmd-7'), open, { S3_ACCESS_KEY_ID: customer.accessKeyId, S3_SECRET_ACCESS_KEY: customer.secretAccessKey })
    const error = await uploadOutputs(target, 'cmd-7', workDir, [{ alias: 'out_x', filename: 'x.mp4', path: 'outputs/x.mp4', contentType: null }]).catch(
      (e: unknown) => e,
    )
    t.equal((error as RunnerFailure).errorStatus, 'DESTINATION_UPLOAD_FAILED')
    t.match((error as RunnerFailure).message, /no credentials for storage destination sd_a{32}/)
  })

  t.test('malformed credentials files are refused without quoting them', async (t) => {
    const dir = await scratchDir(t)
    const file = join(dir, 'credentials.json')
    await writeFile(file, '{"accessKeyId": "AKIA-leak", "secretAccessKey": ')
    const target = uploadTargetFor(spec('cmd-8'), open, { FFKUBE_DESTINATION_CREDENTIALS_FILE: file })
    const error = await uploadOutputs(target, 'cmd-8', workDir, []).catch((e: unknown) => e)
    t.equal((error as RunnerFailure).errorStatus, 'DESTINATION_UPLOAD_FAILED')
    t.notMatch((error as RunnerFailure).message, /AKIA-leak/)
  })

  t.test('managed storage is unchanged: INTERNAL, from S3_* settings', async (t) => {
    const target = uploadTargetFor({ ...spec('cmd-9'), storageDestinationId: null, storageDestination: null }, readRunnerConfig({ S3_BUCKET: 'managed' }), {})
    t.match(target, { location: 'INTERNAL', bucket: 'managed', guard: null })
  })
})
