/**
 * Storage destinations end to end, through HTTP, with the service as `npm
 * start` runs it (local executor, warm runner pool) and two real S3 servers:
 * the service's managed storage, and a "customer" MinIO (a second S3 implementation) with its own
 * credentials that only the destination knows.
 */
import { spawn } from 'node:child_process'
import { execFile } from 'node:child_process'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { GetObjectCommand, HeadObjectCommand, ListObjectsV2Command } from '@aws-sdk/client-s3'
import t from 'tap'
import { toolPath } from '../../api/local/tools.js'
import { makeClip, serveFiles } from '../harness/media.js'
import { startS3 } from '../harness/s3.js'
import { scratchDir } from '../harness/scratch.js'
import { Client, serviceEnvironment, startService } from '../e2e/service.js'

const run = promisify(execFile)
const WRONG_SECRET = 'wrong-secret-that-must-never-be-echoed-0123'

/** A second account, made with the admin CLI against the service's database. */
async function createAccount(env: NodeJS.ProcessEnv, plan: string): Promise<{ account_id: string; api_key: string }> {
  const child = spawn(process.execPath, ['dist/api/admin/cli.js', 'create-account', '--plan', plan], { env, stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
  const code = await new Promise((resolve) => child.once('exit', resolve))
  if (code !== 0) throw new Error(`admin create-account exited ${String(code)}: ${stderr}`)
  return JSON.parse(stdout) as { account_id: string; api_key: string }
}

t.test('a Business account sends outputs to its own bucket and finds them at the documented key', async (t) => {
  const dir = await scratchDir(t)
  const [environment, customer, clip] = await Promise.all([
    serviceEnvironment(t, { LOG_LEVEL: 'info' }),
    startS3(t, { server: 'minio' }),
    makeClip(join(dir, 'clip.mp4'), { seconds: 1, width: 640, height: 360 }),
  ])
  const customerBucket = await customer.createBucket('customer-media')
  const customerS3 = customer.client()
  t.teardown(() => customerS3.destroy())
  const service = await startService(t, environment)
  const media = await serveFiles(t, [clip])
  const api = new Client(service)
  const other = new Client({ baseUrl: service.baseUrl, apiKey: (await createAccount(environment.env, 'business')).api_key })
  const growth = new Client({ baseUrl: service.baseUrl, apiKey: (await createAccount(environment.env, 'growth')).api_key })
  // Raw IP endpoints are always refused; with ALLOW_PRIVATE_NETWORKS=1 an http:// host name on loopback is allowed.
  const endpoint = customer.endpoint.replace('127.0.0.1', 'localhost')
  const bodies: string[] = []
  const call = async (client: Client, method: string, path: string, body?: unknown) => {
    const answer = await client.request(method, path, body)
    bodies.push(JSON.stringify(answer.body))
    return answer
  }
  const destinationBody = (overrides: Record<string, unknown> = {}) => ({
    name: `customer-${Math.random().toString(16).slice(2)}`,
    endpoint_url: endpoint,
    region: customer.region,
    bucket: customerBucket,
    prefix: '/tenant-a/exports/',
    public_base_url: 'https://cdn.example.com/media/',
    path_style: true,
    credentials: { access_key_id: customer.accessKeyId, secret_access_key: customer.secretAccessKey },
    ...overrides,
  })
  const transcode = (extra: Record<string, unknown>) => ({
    input_files: { in_video: media.url(clip) },
    output_files: { out_small: 'small.mp4' },
    ffmpeg_command: 'ffmpeg -i {{in_video}} -vf scale=320:-2 -c:v libx264 -preset ultrafast -an {{out_small}}',
    ...extra,
  })

  const created = await call(api, 'POST', '/storage-destinations', destinationBody())
  t.equal(created.status, 201, JSON.stringify(created.body))
  const destinationId: string = created.body.storage_destination_id
  t.match(destinationId, /^sd_[0-9a-f]{32}$/)
  t.equal(created.body.prefix, 'tenant-a/exports')
  t.same(created.body.credentials, { access_key_id_masked: `${customer.accessKeyId.slice(0, 4)}…${customer.accessKeyId.slice(-4)}` })

  t.test('the connection test passes with the customer’s credentials', async (t) => {
    const tested = await call(api, 'POST', `/storage-destinations/${destinationId}/test`)
    t.equal(tested.status, 200)
    t.same(tested.body, { ok: true })
  })

  t.test('a command’s output lands at {prefix}/{command_id}/{filename} with persistent locators', async (t) => {
    const accepted = await call(api, 'POST', '/run-ffmpeg-command', transcode({ storage_destination_id: destinationId }))
    t.equal(accepted.status, 200, JSON.stringify(accepted.body))
    const commandId: string = accepted.body.command_id
    const done = await api.waitForCommand(commandId, 120_000)
    t.equal(done.status, 'SUCCESS', JSON.stringify(done))
    const key = `tenant-a/exports/${commandId}/small.mp4`
    const out = done.output_files.out_small
    t.match(out, {
      filename: 'small.mp4',
      storage_location: 'EXTERNAL',
      external_uri: `s3://${customerBucket}/${key}`,
      external_object_key: key,
      storage_url: `https://cdn.example.com/media/${key}`,
      status: 'STORED',
      is_deleted: false,
      service_store_type: 'OUTPUT',
      width: 320,
      height: 180,
      codec: 'h264',
    })
    // The customer reads it with its own client, not the service's.
    const object = await customerS3.send(new GetObjectCommand({ Bucket: customerBucket, Key: key }))
    const bytes = Buffer.from(await object.Body!.transformToByteArray())
    t.equal(object.ContentType, 'video/mp4')
    t.equal(Math.round((bytes.length / 1048576) * 1e6) / 1e6, out.size_mbytes, 'the object is the probed output')
    await writeFile(join(dir, 'fetched.mp4'), bytes)
    const { stdout } = await run(toolPath('ffprobe'), ['-v', 'error', '-select_streams', 'v:0', '-show_entries', 'stream=width,height,codec_name', '-of', 'json', join(dir, 'fetched.mp4')])
    t.match(JSON.parse(stdout).streams[0], { width: 320, height: 180, codec_name: 'h264' })
    const managed = environment.s3.client()
    const inManaged = await managed.send(new ListObjectsV2Command({ Bucket: environment.s3.bucket, Prefix: `outputs/${commandId}/` }))
    managed.destroy()
    t.equal(inManaged.KeyCount ?? 0, 0, 'nothing went to managed storage')

    const again = await call(api, 'GET', `/commands/${commandId}`)
    t.same(again.body.output_files, done.output_files, 'the locators persist in the command result')

    t.test('DELETE /files/:id on the external output changes nothing', async (t) => {
      const deleted = await call(api, 'DELETE', `/files/${out.file_id}`)
      t.equal(deleted.status, 200)
      t.same(deleted.body, { deleted: false, file_id: out.file_id, external: true })
      const file = await call(api, 'GET', `/files/${out.file_id}`)
      t.match(file.body, { is_deleted: false, status: 'STORED', storage_url: out.storage_url })
      await customerS3.send(new HeadObjectCommand({ Bucket: customerBucket, Key: key }))
    })

    t.test('DELETE /commands/:id/files counts no external output and leaves it in the bucket', async (t) => {
      const deleted = await call(api, 'DELETE', `/commands/${commandId}/files`)
      t.same(deleted.body, { deleted: true, files_deleted: 0 })
      const after = await call(api, 'GET', `/commands/${commandId}`)
      t.equal(after.body.output_files.out_small.is_deleted, false)
      await customerS3.send(new HeadObjectCommand({ Bucket: customerBucket, Key: key }))
    })
  })

  t.test('each command of a multiple request has its own destination; a private bucket gives storage_url null', async (t) => {
    const privateDest = await call(api, 'POST', '/storage-destinations', destinationBody({ prefix: '', public_base_url: undefined }))
    t.equal(privateDest.status, 201)
    const accepted = await call(api, 'POST', '/run-multiple-ffmpeg-commands', {
      commands: [transcode({ storage_destination_id: privateDest.body.storage_destination_id }), transcode({})],
    })
    t.equal(accepted.status, 200, JSON.stringify(accepted.body))
    const [external, managed] = await Promise.all(accepted.body.command_ids.map((id: string) => api.waitForCommand(id, 120_000)))
    t.match(external.output_files.out_small, {
      storage_location: 'EXTERNAL',
      external_object_key: `${external.command_id}/small.mp4`,
      external_uri: `s3://${customerBucket}/${external.command_id}/small.mp4`,
      storage_url: null,
    })
    await customerS3.send(new HeadObjectCommand({ Bucket: customerBucket, Key: `${external.command_id}/small.mp4` }))
    t.match(managed.output_files.out_small, { storage_location: 'INTERNAL', external_uri: null, external_object_key: null })
    t.match(managed.output_files.out_small.storage_url, /^http/)
  })

  t.test('wrong credentials: the test answers ok:false and a command FAILS with DESTINATION_UPLOAD_FAILED', async (t) => {
    const wrong = await call(api, 'POST', '/storage-destinations', destinationBody({
      prefix: 'wrong',
      credentials: { access_key_id: customer.accessKeyId, secret_access_key: WRONG_SECRET },
    }))
    t.equal(wrong.status, 201)
    const id = wrong.body.storage_destination_id
    const tested = await call(api, 'POST', `/storage-destinations/${id}/test`)
    t.same(tested.body, { ok: false, error: 'could not write the test object: SignatureDoesNotMatch' })
    const accepted = await call(api, 'POST', '/run-ffmpeg-command', transcode({ storage_destination_id: id }))
    const done = await api.waitForCommand(accepted.body.command_id, 120_000)
    t.equal(done.status, 'FAILED')
    t.equal(done.error_status, 'DESTINATION_UPLOAD_FAILED')
    t.equal(done.error_message, 'upload of small.mp4 to the storage destination failed: SignatureDoesNotMatch')
    const listed = await customerS3.send(new ListObjectsV2Command({ Bucket: customerBucket, Prefix: 'wrong/' }))
    t.equal(listed.KeyCount ?? 0, 0, 'nothing was written')
  })

  t.test('a disabled destination is refused with 409; its bucket objects stay', async (t) => {
    const doomed = await call(api, 'POST', '/storage-destinations', destinationBody())
    const id = doomed.body.storage_destination_id
    const disabled = await call(api, 'DELETE', `/storage-destinations/${id}`)
    t.equal(disabled.status, 200)
    t.equal(disabled.body.is_active, false)
    const refused = await call(api, 'POST', '/run-ffmpeg-command', transcode({ storage_destination_id: id }))
    t.equal(refused.status, 409)
    t.equal(refused.body.error, 'CONFLICT')
    const multiple = await call(api, 'POST', '/run-multiple-ffmpeg-commands', { commands: [transcode({}), transcode({ storage_destination_id: id })] })
    t.equal(multiple.status, 409)
    t.match(multiple.body.message, /^commands\[1\]\.storage_destination_id: /)
    const listed = await customerS3.send(new ListObjectsV2Command({ Bucket: customerBucket, Prefix: 'tenant-a/exports/' }))
    t.ok((listed.KeyCount ?? 0) > 0, 'earlier outputs are still in the bucket')
  })

  t.test('another account’s destination is 404 on every path; a non-Business account gets 403', async (t) => {
    const theirs = await call(other, 'POST', '/storage-destinations', destinationBody())
    t.equal(theirs.status, 201)
    const theirId = theirs.body.storage_destination_id
    const used = await call(api, 'POST', '/run-ffmpeg-command', transcode({ storage_destination_id: theirId }))
    t.equal(used.status, 404)
    t.equal(used.body.error, 'NOT_FOUND')
    t.equal((await call(api, 'GET', `/storage-destinations/${theirId}`)).status, 404)
    t.equal((await call(other, 'POST', '/run-ffmpeg-command', transcode({ storage_destination_id: destinationId }))).status, 404)
    t.equal((await call(growth, 'POST', '/run-ffmpeg-command', transcode({ storage_destination_id: destinationId }))).status, 403)
    const malformed = await call(api, 'POST', '/run-ffmpeg-command', transcode({ storage_destination_id: 'sd_XYZ' }))
    t.equal(malformed.status, 422)
  })

  t.test('PATCH refuses endpoint_url, region and bucket, and takes new credentials', async (t) => {
    for (const field of ['endpoint_url', 'region', 'bucket']) {
      const refused = await call(api, 'PATCH', `/storage-destinations/${destinationId}`, { [field]: 'other' })
      t.equal(refused.status, 422, field)
      t.match(refused.body.message, new RegExp(`^body\\.${field}: cannot be changed`))
    }
    const rotated = await call(api, 'PATCH', `/storage-destinations/${destinationId}`, {
      credentials: { access_key_id: customer.accessKeyId, secret_access_key: WRONG_SECRET },
    })
    t.equal(rotated.status, 200)
    t.same((await call(api, 'POST', `/storage-destinations/${destinationId}/test`)).body, { ok: false, error: 'could not write the test object: SignatureDoesNotMatch' })
    const restored = await call(api, 'PATCH', `/storage-destinations/${destinationId}`, {
      credentials: { access_key_id: customer.accessKeyId, secret_access_key: customer.secretAccessKey },
    })
    t.equal(restored.status, 200)
    t.same((await call(api, 'POST', `/storage-destinations/${destinationId}/test`)).body, { ok: true })
  })

  t.test('no response and no log line carried a secret', async (t) => {
    t.ok(bodies.length > 20)
    for (const body of bodies) {
      t.notOk(body.includes(customer.secretAccessKey), 'no customer secret in a response')
      t.notOk(body.includes(WRONG_SECRET), 'no submitted secret in a response')
    }
    const log = service.log()
    t.ok(log.includes('storage destination created'), 'the log was captured')
    t.notOk(log.includes(customer.secretAccessKey), 'no customer secret in the service log')
    t.notOk(log.includes(WRONG_SECRET), 'no submitted secret in the service log')
  })
})
