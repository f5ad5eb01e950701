/**
 * Retention through HTTP: files are stored through the API (an upload, a
 * runner's SUCCESS applied by the real status projector), the clock is the
 * test's (FakeTime), and the sweep is the worker's RetentionSweep over the
 * same repository, run when the test says. Real FerretDB, NATS and versitygw
 * (a second versitygw plays a customer's bucket).
 */
import { randomBytes } from 'node:crypto'
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { HeadObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3'
import t from 'tap'
import { createLogger } from '../../api/logger.js'
import { RetentionSweep } from '../../api/files/retention-sweep.js'
import { StatusProjector } from '../../api/projector/status-projector.js'
import { listBucket, multiFileResult, publishLikeRunner, putLikeRunner, successEvent } from '../harness/outputs.js'
import { destinationFields, startS3 } from '../harness/s3.js'
import { scratchDir } from '../harness/scratch.js'
import { startWorld, until, type World } from '../webhooks/world.js'

const DAY = 86_400_000

async function call(world: World, apiKey: string, method: 'GET' | 'POST' | 'DELETE', url: string, payload?: object) {
  return world.api.app.inject({ method, url: `/api/v1${url}`, headers: { 'x-api-key': apiKey }, ...(payload ? { payload } : {}) })
}

/** POST /files/upload with one small file; returns its id. */
async function upload(world: World, apiKey: string, bytes: Buffer): Promise<string> {
  const boundary = `----ffkube${randomBytes(6).toString('hex')}`
  const payload = Buffer.concat([
    Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="clip.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`),
    bytes,
    Buffer.from(`\r\n--${boundary}--\r\n`),
  ])
  const res = await world.api.app.inject({ method: 'POST', url: '/api/v1/files/upload', headers: { 'x-api-key': apiKey, 'content-type': `multipart/form-data; boundary=${boundary}` }, payload })
  if (res.statusCode !== 200) throw new Error(`upload answered ${res.statusCode}: ${res.body}`)
  return res.json<{ file_id: string }>().file_id
}

async function exists(world: World, key: string, bucket = world.api.s3Bucket, s3 = world.api.s3): Promise<boolean> {
  return s3.send(new HeadObjectCommand({ Bucket: bucket, Key: key })).then(() => true, () => false)
}

t.test('retention', async (t) => {
  const world = await startWorld(t)
  const logger = createLogger('test', 'silent')
  const projector = new StatusProjector({ nats: world.nc, commands: world.api.app.commands, files: world.api.app.files, logger, now: world.time.clock })
  await projector.start()
  t.teardown(() => projector.stop())
  const sweep = new RetentionSweep({ files: world.api.app.files, logger, now: world.time.clock })
  const { s3, s3Bucket: bucket } = world.api
  const js = world.nc.jetstream()
  const dir = await scratchDir(t)
  const advance = (ms: number) => world.time.advanceTo(world.time.now + ms)

  /** A command of `apiKey` whose output `out_v` the runner stored as the files of `dir` (several: a multi-file output). */
  async function storedOutput(apiKey: string, files: Record<string, Buffer>, extra: Record<string, unknown> = {}) {
    const commandId = await world.submit(apiKey, { output_files: { out_v: 'main.m3u8' }, ffmpeg_command: 'ffmpeg -i {{in_video}} {{out_v}}', ...extra })
    const outDir = join(dir, commandId)
    await mkdir(outDir)
    for (const [name, bytes] of Object.entries(files)) await writeFile(join(outDir, name), bytes)
    const members = await putLikeRunner(s3, bucket, 'outputs', commandId, outDir)
    await publishLikeRunner(js, successEvent(commandId, { out_v: multiFileResult({ bucket, storage_location: 'INTERNAL' }, 'main.m3u8', members) }))
    const poll = await until(`command ${commandId} SUCCESS`, async () => {
      const body = JSON.parse(await world.poll(apiKey, commandId))
      return body.status === 'SUCCESS' ? body : null
    })
    return { commandId, members, out: poll.output_files.out_v }
  }

  t.test('an upload expires after its plan\'s retention: is_deleted true, its data removed, as DELETE does it', async (t) => {
    const { api_key } = await world.api.createAccount('free')
    const storedAt = world.time.now
    const fileId = await upload(world, api_key, randomBytes(2048))
    const before = (await call(world, api_key, 'GET', `/files/${fileId}`)).json()
    t.equal(before.expires_at, new Date(storedAt + DAY).toISOString(), 'the free plan keeps files one day')
    const key = (await world.api.db.collection('files').findOne({ _id: fileId as never }))!.object_key as string
    t.ok(await exists(world, key), 'the bytes are in the bucket')

    advance(DAY - 1)
    t.equal(await sweep.sweep(), 0, 'a millisecond before its expiry the sweep deletes nothing')
    t.match((await call(world, api_key, 'GET', `/files/${fileId}`)).json(), { is_deleted: false })
    t.ok(await exists(world, key), 'and the bytes stay')

    advance(1)
    t.equal(await sweep.sweep(), 1, 'at its expiry the sweep deletes it')
    const after = (await call(world, api_key, 'GET', `/files/${fileId}`)).json()
    // Its status stays what it was (no file processor runs here: PROCESSING), as DELETE leaves it.
    t.match(after, { file_id: fileId, is_deleted: true, storage_url: null, status: before.status, expires_at: before.expires_at })
    t.notOk(await exists(world, key), 'its bytes are gone')
    t.notOk((await call(world, api_key, 'GET', '/files')).json().files.some((f: { file_id: string }) => f.file_id === fileId), 'GET /files lists only files not deleted')
    t.equal((await call(world, api_key, 'DELETE', `/files/${fileId}`)).statusCode, 404, 'a DELETE after it is the spec\'s 404 for a deleted file')
    t.equal(await sweep.sweep(), 0, 'a second sweep finds nothing')
  })

  t.test('a command\'s retention_days shortens its outputs\' retention, and a multi-file output loses every object', async (t) => {
    const { api_key } = await world.api.createAccount('business')
    const files = { 'main.m3u8': Buffer.from('#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2,\nseg_0.ts\n#EXTINF:2,\nseg_1.ts\n#EXT-X-ENDLIST\n'), 'seg_0.ts': randomBytes(4000), 'seg_1.ts': randomBytes(3000) }
    const storedAt = world.time.now
    const { commandId, out } = await storedOutput(api_key, files, { retention_days: 2 })
    t.equal(out.file_count, 3)
    const file = (await call(world, api_key, 'GET', `/files/${out.file_id}`)).json()
    t.equal(file.expires_at, new Date(storedAt + 2 * DAY).toISOString(), 'two days, not the business plan\'s ninety')
    t.equal((await listBucket(s3, bucket, `outputs/${commandId}/`)).length, 3)
    const playback = (await world.api.db.collection('files').findOne({ _id: out.file_id }))!.playback_keys as string[]
    t.ok(playback.length > 0, 'the playlist has a playback copy')

    advance(2 * DAY)
    t.equal(await sweep.sweep(), 1)
    t.same(await listBucket(s3, bucket, `outputs/${commandId}/`), [], 'every member is gone')
    for (const key of playback) t.notOk(await exists(world, key), `the playback copy ${key} is gone`)
    const poll = JSON.parse(await world.poll(api_key, commandId))
    t.match(poll.output_files.out_v, { is_deleted: true, storage_url: null, file_count: 3 }, 'the command\'s result shows it deleted')
    t.same(poll.output_files.out_v.files.map((f: { storage_url: string | null }) => f.storage_url), [null, null, null], 'no member keeps a URL')
    t.match((await call(world, api_key, 'GET', `/files/${out.file_id}`)).json(), { is_deleted: true, storage_url: null })
  })

  t.test('an output in a customer\'s bucket is never deleted, however old', async (t) => {
    const { api_key } = await world.api.createAccount('business')
    const customer = await startS3(t)
    const customerS3 = customer.client()
    t.teardown(() => customerS3.destroy())
    const created = await call(world, api_key, 'POST', '/storage-destinations', { name: 'customer', prefix: 'tenant', ...destinationFields(customer, customer.bucket) })
    t.equal(created.statusCode, 201, created.body)
    const commandId = await world.submit(api_key, { output_files: { out_v: 'out.mp4' }, ffmpeg_command: 'ffmpeg -i {{in_video}} {{out_v}}', storage_destination_id: created.json().storage_destination_id })
    const key = `tenant/${commandId}/out.mp4`
    await customerS3.send(new PutObjectCommand({ Bucket: customer.bucket, Key: key, Body: randomBytes(1000) }))
    await publishLikeRunner(js, successEvent(commandId, { out_v: multiFileResult({ bucket: customer.bucket, storage_location: 'EXTERNAL' }, 'out.mp4', [{ filename: 'out.mp4', object_key: key, size_bytes: 1000, mime_type: null }]) }))
    const out = await until('the external output', async () => JSON.parse(await world.poll(api_key, commandId)).output_files?.out_v)
    t.match((await call(world, api_key, 'GET', `/files/${out.file_id}`)).json(), { expires_at: null, is_deleted: false }, 'it has no expiry')

    advance(4000 * DAY)
    await sweep.sweep()
    t.ok(await exists(world, key, customer.bucket, customerS3), 'the customer\'s object is still there')
    t.match(JSON.parse(await world.poll(api_key, commandId)).output_files.out_v, { is_deleted: false, storage_location: 'EXTERNAL', external_object_key: key })
  })

  t.test('retention_days above the plan\'s retention is refused with the endpoint\'s status, naming the field and the maximum', async (t) => {
    const free = await world.api.createAccount('free')
    const growth = await world.api.createAccount('growth')
    const ffmpeg = { input_files: { in_v: 'https://media.example.com/a.mp4' }, output_files: { out_v: 'o.mp4' }, ffmpeg_command: 'ffmpeg -i {{in_v}} {{out_v}}' }
    const before = await world.api.db.collection('commands').countDocuments()

    const single = await call(world, free.api_key, 'POST', '/run-ffmpeg-command', { ...ffmpeg, retention_days: 2 })
    t.equal(single.statusCode, 400)
    t.same(single.json(), { error: 'INVALID_REQUEST', message: 'retention_days: at most 1 on the free plan (its retention), got 2' })
    const chained = await call(world, growth.api_key, 'POST', '/run-chained-ffmpeg-commands', { input_files: ffmpeg.input_files, output_files: ffmpeg.output_files, ffmpeg_commands: [ffmpeg.ffmpeg_command], retention_days: 31 })
    t.equal(chained.statusCode, 400)
    t.match(chained.json(), { error: 'INVALID_REQUEST', message: /^retention_days: at most 30 on the growth plan/ })
    const multiple = await call(world, growth.api_key, 'POST', '/run-multiple-ffmpeg-commands', { commands: [{ ...ffmpeg, retention_days: 30 }, { ...ffmpeg, retention_days: 45 }] })
    t.equal(multiple.statusCode, 422, 'an element\'s fault is 422 in a multiple request')
    t.match(multiple.json(), { error: 'VALIDATION_ERROR', message: /^commands\[1\]\.retention_days: at most 30 on the growth plan/ })
    const download = await call(world, growth.api_key, 'POST', '/ytdlp-download', { input_urls: { in_v: 'https://videos.example.com/watch/1' }, retention_days: 31 })
    t.equal(download.statusCode, 422, 'the yt-dlp endpoints list no 400')
    t.match(download.json(), { error: 'VALIDATION_ERROR', message: /^retention_days: at most 30/ })
    const preset = await call(world, growth.api_key, 'POST', '/presets', { name: 'copy', ffmpeg_command: 'ffmpeg -i {{in_v}} {{out_v}}', input_file_keys: ['in_v'], output_file_definitions: { out_v: 'o.mp4' } })
    t.equal(preset.statusCode, 201, preset.body)
    const executed = await call(world, growth.api_key, 'POST', `/presets/${preset.json().preset_id}/execute`, { input_files: ffmpeg.input_files, retention_days: 31 })
    t.equal(executed.statusCode, 422)
    t.match(executed.json(), { error: 'VALIDATION_ERROR', message: /^retention_days: at most 30/ })
    t.equal(await world.api.db.collection('commands').countDocuments(), before, 'nothing was recorded')

    const atMaximum = await call(world, growth.api_key, 'POST', '/run-ffmpeg-command', { ...ffmpeg, retention_days: 30 })
    t.equal(atMaximum.statusCode, 200, 'the plan\'s own retention is accepted')
  })

  t.test('retention_days that is not a positive integer is refused, never coerced', async (t) => {
    const { api_key } = await world.api.createAccount('business')
    const ffmpeg = { input_files: { in_v: 'https://media.example.com/a.mp4' }, output_files: { out_v: 'o.mp4' }, ffmpeg_command: 'ffmpeg -i {{in_v}} {{out_v}}' }
    for (const value of [0, -3, 1.5, '7', null, true, 3651]) {
      const res = await call(world, api_key, 'POST', '/run-ffmpeg-command', { ...ffmpeg, retention_days: value })
      t.equal(res.statusCode, 400, `retention_days ${JSON.stringify(value)}`)
      t.match(res.json(), { error: 'INVALID_REQUEST', message: /retention_days/ }, `${JSON.stringify(value)}: the message names the field`)
      const download = await call(world, api_key, 'POST', '/ytdlp-download', { input_urls: { in_v: 'https://videos.example.com/watch/1' }, retention_days: value })
      t.equal(download.statusCode, 422, `ytdlp-download, retention_days ${JSON.stringify(value)}`)
      t.match(download.json(), { error: 'VALIDATION_ERROR', message: /retention_days/ })
    }
  })

  t.test('a plan change does not move the expiry of files stored before it', async (t) => {
    const { account_id, api_key } = await world.api.createAccount('free')
    const storedAt = world.time.now
    const first = await upload(world, api_key, randomBytes(100))
    await world.api.app.accounts.setPlan(account_id, 'business')
    const second = await upload(world, api_key, randomBytes(100))
    t.equal((await call(world, api_key, 'GET', `/files/${first}`)).json().expires_at, new Date(storedAt + DAY).toISOString(), 'the first keeps the free plan\'s day')
    t.equal((await call(world, api_key, 'GET', `/files/${second}`)).json().expires_at, new Date(storedAt + 90 * DAY).toISOString(), 'the next gets business\'s ninety days')
  })

  t.test('many expired files are deleted in bounded batches, and two sweeps at once delete each file once', async (t) => {
    // What earlier tests left to expire within a day goes first, so the count below is of these files alone.
    advance(DAY)
    await sweep.sweep()
    const { api_key } = await world.api.createAccount('free')
    const ids: string[] = []
    for (let i = 0; i < 7; i++) ids.push(await upload(world, api_key, randomBytes(64)))
    advance(DAY)
    const seen: number[] = []
    const files = world.api.app.files
    const counting = { expiredFiles: async (days: readonly string[], now: Date, limit: number) => { const batch = await files.expiredFiles(days, now, limit); seen.push(batch.length); return batch }, deleteManaged: files.deleteManaged.bind(files) }
    const one = new RetentionSweep({ files: counting, logger, now: world.time.clock, batchSize: 3 })
    const two = new RetentionSweep({ files: counting, logger, now: world.time.clock, batchSize: 3 })
    const [a, b] = await Promise.all([one.sweep(), two.sweep()])
    t.equal(a + b, 7, `each of the seven files was marked deleted by exactly one sweep (${a} + ${b})`)
    t.ok(seen.every((n) => n <= 3), `no batch held more than 3 (${seen.join(', ')})`)
    for (const id of ids) t.match((await call(world, api_key, 'GET', `/files/${id}`)).json(), { is_deleted: true, storage_url: null }, id)
  })

  t.test('usage counts an expired output as gone from the day it expired', async (t) => {
    const { api_key } = await world.api.createAccount('growth')
    // Midnight of a fresh day, so the days below are whole.
    world.time.advanceTo(Math.ceil((world.time.now + 1) / DAY) * DAY)
    const { out } = await storedOutput(api_key, { 'main.m3u8': Buffer.from('#EXTM3U\n'), 'part.ts': randomBytes(5000) }, { retention_days: 2 })
    advance(2 * DAY + 12 * 3600_000)
    t.equal(await sweep.sweep(), 1)
    const usage = (await call(world, api_key, 'GET', '/usage?days=3')).json()
    t.same(usage.by_day.map((d: { files_stored: number }) => d.files_stored), [1, 1, 0], 'stored on the first two days, gone on the day it expired')
    t.ok(usage.by_day[0].bytes_stored >= 5000, `the first day counts its bytes (${usage.by_day[0].bytes_stored})`)
    t.equal(usage.by_day[2].bytes_stored, 0)
    t.match((await call(world, api_key, 'GET', `/files/${out.file_id}`)).json(), { is_deleted: true })
  })
})
