/**
 * Multi-file outputs from the runner's SUCCESS onward, through HTTP: a real
 * FerretDB, NATS JetStream and versitygw (a customer's MinIO for destinations), the real status projector and webhook
 * deliverer. Each test puts real files in the bucket as the runner's upload
 * does and publishes the SUCCESS event that reports them; the HLS outputs
 * are made by the provisioned ffmpeg and played over HTTP by Debian's
 * /usr/bin/ffprobe, a standard player with network protocols.
 */
import { randomBytes } from 'node:crypto'
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { PutBucketPolicyCommand } from '@aws-sdk/client-s3'
import t from 'tap'
import { createLogger } from '../../api/logger.js'
import { StatusProjector } from '../../api/projector/status-projector.js'
import { STATUS_STREAM } from '../../contracts/status-events.js'
import { listBucket, MAIN_FILE_FACTS, makeHlsLadder, multiFileResult, play, publishLikeRunner, putLikeRunner, successEvent } from '../harness/outputs.js'
import { destinationFields, startS3 } from '../harness/s3.js'
import { scratchDir } from '../harness/scratch.js'
import { startReceiver, startWorld, until, type World } from '../webhooks/world.js'




async function download(url: string): Promise<Buffer> {
  const res = await fetch(url)
  if (!res.ok) throw new Error(`GET ${url} answered ${res.status}`)
  return Buffer.from(await res.arrayBuffer())
}

async function call(world: World, apiKey: string, method: 'GET' | 'POST' | 'DELETE', url: string, payload?: object) {
  return world.api.app.inject({ method, url: `/api/v1${url}`, headers: { 'x-api-key': apiKey }, ...(payload ? { payload } : {}) })
}

/**
 * Submits a command with one output, only to record it: the test plays the
 * runner's part. The command and filenames are ordinary ones, accepted
 * whatever the argument policy allows of multi-file muxers.
 */
async function submitWithOutput(world: World, apiKey: string, alias: string, filename: string, extra: Record<string, unknown> = {}): Promise<string> {
  return world.submit(apiKey, { output_files: { [alias]: filename }, ffmpeg_command: `ffmpeg -i {{in_video}} {{${alias}}}`, ...extra })
}

async function succeeded(world: World, apiKey: string, commandId: string) {
  return until(`command ${commandId} SUCCESS`, async () => {
    const poll = JSON.parse(await world.poll(apiKey, commandId))
    return poll.status === 'SUCCESS' ? poll : null
  })
}

/** Resolves once the projector has acknowledged every status event published so far: anything they change is written. */
async function projected(world: World): Promise<void> {
  const jsm = await world.nc.jetstreamManager()
  await until('every status event applied', async () => {
    const consumer = await jsm.consumers.info(STATUS_STREAM, 'ffkube-status-projector')
    return consumer.num_pending === 0 && consumer.num_ack_pending === 0
  })
}

t.test('multi-file outputs', async (t) => {
  const world = await startWorld(t)
  const projector = new StatusProjector({ nats: world.nc, commands: world.api.app.commands, files: world.api.app.files, logger: createLogger('test', 'silent') })
  await projector.start()
  t.teardown(() => projector.stop())
  const receiver = await startReceiver(t)
  const { api_key } = await world.api.createAccount('business')
  await world.putWebhook(api_key, { url: receiver.url })
  await world.deliverer()
  const s3 = world.api.s3
  const bucket = world.api.s3Bucket
  const dir = await scratchDir(t)
  const js = world.nc.jetstream()

  // 50 thumbnails of random bytes, sizes all different.
  const thumbs = join(dir, 'thumbs')
  await mkdir(thumbs)
  for (let i = 1; i <= 50; i++) await writeFile(join(thumbs, `thumb_${String(i).padStart(3, '0')}.jpg`), randomBytes(1000 + i * 37))
  const thumbsCommand = await submitWithOutput(world, api_key, 'out_thumbs', 'thumb.jpg')
  const thumbMembers = await putLikeRunner(s3, bucket, 'outputs', thumbsCommand, thumbs)
  const thumbsEvent = successEvent(thumbsCommand, { out_thumbs: multiFileResult({ bucket, storage_location: 'INTERNAL' }, 'thumb_001.jpg', thumbMembers) })
  await publishLikeRunner(js, thumbsEvent)

  t.test('a SUCCESS with 50 members gives file_count 50, their total, and a storage_url per file that downloads its bytes', async (t) => {
    const poll = await succeeded(world, api_key, thumbsCommand)
    const out = poll.output_files.out_thumbs
    t.equal(out.file_count, 50)
    t.equal(out.files.length, 50)
    const totalBytes = thumbMembers.reduce((sum, m) => sum + m.size_bytes, 0)
    t.equal(out.size_mbytes, Math.round((totalBytes / 1048576) * 1e6) / 1e6, 'size_mbytes is the total of every file')
    t.equal(out.filename, 'thumb_001.jpg', 'the main file is the first')
    for (const [i, file] of out.files.entries()) {
      const name = `thumb_${String(i + 1).padStart(3, '0')}.jpg`
      t.equal(file.filename, name)
      t.equal(file.mime_type, 'image/jpeg')
      t.ok((await download(file.storage_url)).equals(await import('node:fs/promises').then((fs) => fs.readFile(join(thumbs, name)))), `${name} downloads its bytes`)
    }
    t.ok((await download(out.storage_url)).equals(await download(out.files[0].storage_url)), 'the output\'s storage_url is its main file')
    const file = (await call(world, api_key, 'GET', `/files/${out.file_id}`)).json()
    t.equal(file.file_count, 50, 'GET /files/:id shows the same')
    t.same(file.files, out.files)
    const asInput = await call(world, api_key, 'POST', '/run-ffmpeg-command', {
      input_files: { in_frame: out.files[7].storage_url }, output_files: { out_png: 'frame.png' }, ffmpeg_command: 'ffmpeg -i {{in_frame}} {{out_png}}',
    })
    t.equal(asInput.statusCode, 200, `one file's storage_url is an input of a later command, like any storage_url: ${asInput.body}`)
  })

  t.test('the webhook carries the files exactly as GET shows them', async (t) => {
    const got = await until('the webhook', () => receiver.received.find((r) => r.body.includes(thumbsCommand)))
    const poll = await world.poll(api_key, thumbsCommand)
    t.equal(got.body, `{"data":${poll},"timestamp":${world.time.now}}`)
    t.equal(JSON.parse(got.body).data.output_files.out_thumbs.file_count, 50)
  })

  t.test('an HLS ladder\'s storage_url plays its whole duration over HTTP without credentials', async (t) => {
    const ladder = join(dir, 'ladder')
    await mkdir(ladder)
    await makeHlsLadder(ladder)
    const commandId = await submitWithOutput(world, api_key, 'out_hls', 'master.m3u8')
    const members = await putLikeRunner(s3, bucket, 'outputs', commandId, ladder)
    await publishLikeRunner(js, successEvent(commandId, { out_hls: multiFileResult({ bucket, storage_location: 'INTERNAL' }, 'master.m3u8', members) }))
    const out = (await succeeded(world, api_key, commandId)).output_files.out_hls
    t.equal(out.file_count, members.length)
    t.same(out.files.map((f: { filename: string }) => f.filename), members.map((m) => m.filename))
    t.match(out.storage_url, /\/playback\//, 'the main storage_url is the playable copy')
    t.equal(new URL(out.storage_url).searchParams.get('X-Amz-Expires'), String(7 * 24 * 3600), 'signed for seven days')
    const played = await play(out.storage_url)
    t.ok(played.duration > 3.8 && played.duration < 4.3, `the master plays 4 s (duration ${played.duration})`)
    t.ok(played.span > 3.8, `every segment was read (packets span ${played.span})`)
    const original = out.files.find((f: { filename: string }) => f.filename === 'master.m3u8')
    t.equal((await download(original.storage_url)).toString(), await import('node:fs/promises').then((fs) => fs.readFile(join(ladder, 'master.m3u8'), 'utf8')), 'the stored master is as ffmpeg wrote it')
    const alone = await play(original.storage_url).catch(() => null)
    t.ok(alone === null || alone.packets === 0, 'the stored master alone does not play: its relative names have no signature')

    t.test('a replayed SUCCESS changes nothing', async (t) => {
      const before = { poll: await world.poll(api_key, commandId), objects: await listBucket(s3, bucket, '') }
      // Under another message id, so JetStream does not drop it: the projector sees the event twice.
      await publishLikeRunner(js, successEvent(commandId, { out_hls: multiFileResult({ bucket, storage_location: 'INTERNAL' }, 'master.m3u8', members) }, `${commandId}:SUCCESS:replay`))
      await projected(world)
      t.equal(await world.poll(api_key, commandId), before.poll, 'the result is unchanged')
      t.same(await listBucket(s3, bucket, ''), before.objects, 'no object was written again')
      const command = await world.api.db.collection('commands').findOne({ _id: commandId as never })
      const again = await world.api.app.files.insertOutputs(command as never, { out_hls: multiFileResult({ bucket, storage_location: 'INTERNAL' }, 'master.m3u8', members) }, new Date())
      t.equal(again.out_hls?.storage_url, out.storage_url, 'recording the outputs again gives back the first record')
      t.same(await listBucket(s3, bucket, ''), before.objects, 'and writes nothing')
    })

    t.test('DELETE /commands/:id/files removes every object of the output and its playback copies', async (t) => {
      t.not((await listBucket(s3, bucket, `playback/${commandId}/`)).length, 0, 'copies exist before')
      const res = await call(world, api_key, 'DELETE', `/commands/${commandId}/files`)
      t.same(res.json(), { deleted: true, files_deleted: 1 }, 'files_deleted counts outputs (records), as the spec reads')
      t.same(await listBucket(s3, bucket, `outputs/${commandId}/`), [], 'no stored file is left')
      t.same(await listBucket(s3, bucket, `playback/${commandId}/`), [], 'no playback copy is left')
      const after = JSON.parse(await world.poll(api_key, commandId)).output_files.out_hls
      t.match(after, { is_deleted: true, storage_url: null, file_count: members.length })
      t.ok(after.files.every((f: { storage_url: string | null }) => f.storage_url === null), 'no member keeps a URL')
      t.same((await call(world, api_key, 'DELETE', `/commands/${commandId}/files`)).json(), { deleted: true, files_deleted: 0 }, 'a retried delete finds nothing left')
    })
  })

  t.test('a single-file output: a replayed SUCCESS changes nothing, and recording it again gives back the first record', async (t) => {
    const single = join(dir, 'single')
    await mkdir(single)
    await writeFile(join(single, 'out.mp4'), randomBytes(5000))
    const commandId = await submitWithOutput(world, api_key, 'out_one', 'out.mp4')
    const [member] = await putLikeRunner(s3, bucket, 'outputs', commandId, single)
    const result = { ...MAIN_FILE_FACTS, size_mbytes: 5000 / 1048576, filename: 'out.mp4', object_key: member!.object_key, bucket, storage_location: 'INTERNAL' as const }
    await publishLikeRunner(js, successEvent(commandId, { out_one: result }))
    const first = (await succeeded(world, api_key, commandId)).output_files.out_one
    await publishLikeRunner(js, successEvent(commandId, { out_one: result }, `${commandId}:SUCCESS:replay`))
    await projected(world)
    t.same(JSON.parse(await world.poll(api_key, commandId)).output_files.out_one, first, 'the result is unchanged')
    const command = await world.api.db.collection('commands').findOne({ _id: commandId as never })
    const again = await world.api.app.files.insertOutputs(command as never, { out_one: result }, new Date())
    t.equal(again.out_one?.storage_url, first.storage_url, 'the first record, its storage_url as first signed')
    t.equal(await world.api.db.collection('files').countDocuments({ command_id: commandId }), 1, 'one record')
  })

  t.test('DELETE /files/:id removes every file of a multi-file output', async (t) => {
    const poll = await succeeded(world, api_key, thumbsCommand)
    const fileId = poll.output_files.out_thumbs.file_id
    t.equal((await listBucket(s3, bucket, `outputs/${thumbsCommand}/`)).length, 50)
    const res = await call(world, api_key, 'DELETE', `/files/${fileId}`)
    t.same(res.json(), { deleted: true, file_id: fileId })
    t.same(await listBucket(s3, bucket, `outputs/${thumbsCommand}/`), [], 'all 50 objects are gone')
    const file = (await call(world, api_key, 'GET', `/files/${fileId}`)).json()
    t.match(file, { is_deleted: true, storage_url: null, file_count: 50 })
    t.equal((await call(world, api_key, 'DELETE', `/files/${fileId}`)).statusCode, 404, 'deleting again is the spec\'s 404')
    const asInput = await call(world, api_key, 'POST', '/run-ffmpeg-command', {
      input_files: { in_frame: poll.output_files.out_thumbs.files[7].storage_url }, output_files: { out_png: 'frame.png' }, ffmpeg_command: 'ffmpeg -i {{in_frame}} {{out_png}}',
    })
    t.match(asInput.json(), { error: 'VALIDATION_ERROR', message: /in_frame: .*was deleted/ }, 'a deleted file\'s URL is no input')
  })

  t.test('a destination with public_base_url: the playlist\'s public URL plays, its relative names resolving beside it', async (t) => {
    const customer = await startS3(t, { server: 'minio' })
    const customerBucket = await customer.createBucket('customer-media')
    const customerS3 = customer.client()
    t.teardown(() => customerS3.destroy())
    // The customer makes the bucket publicly readable, as a public_base_url implies.
    const policy = { Version: '2012-10-17', Statement: [{ Effect: 'Allow', Principal: { AWS: ['*'] }, Action: ['s3:GetObject'], Resource: [`arn:aws:s3:::${customerBucket}/*`] }] }
    await customerS3.send(new PutBucketPolicyCommand({ Bucket: customerBucket, Policy: JSON.stringify(policy) }))
    const destination = async (extra: Record<string, unknown>) => {
      const res = await call(world, api_key, 'POST', '/storage-destinations', {
        name: `customer-${randomBytes(4).toString('hex')}`,
        prefix: 'tenant-a',
        ...destinationFields(customer, customerBucket),
        ...extra,
      })
      t.equal(res.statusCode, 201, res.body)
      return res.json().storage_destination_id as string
    }
    const ladder = join(dir, 'ladder-external')
    await mkdir(ladder)
    await makeHlsLadder(ladder)
    const publicDestination = await destination({ public_base_url: `${customer.endpoint}/${customerBucket}` })
    const privateDestination = await destination({})
    const result = async (destinationId: string) => {
      const commandId = await submitWithOutput(world, api_key, 'out_hls', 'master.m3u8', { storage_destination_id: destinationId })
      const members = await putLikeRunner(customerS3, customerBucket, 'tenant-a', commandId, ladder)
      await publishLikeRunner(js, successEvent(commandId, { out_hls: multiFileResult({ bucket: customerBucket, storage_location: 'EXTERNAL' }, 'master.m3u8', members) }))
      return { commandId, members, out: (await succeeded(world, api_key, commandId)).output_files.out_hls }
    }

    const open = await result(publicDestination)
    t.equal(open.out.storage_url, `${customer.endpoint}/${customerBucket}/tenant-a/${open.commandId}/master.m3u8`, 'the public URL of the master as stored')
    const played = await play(open.out.storage_url)
    t.ok(played.duration > 3.8 && played.span > 3.8, `it plays 4 s (duration ${played.duration}, packets span ${played.span})`)
    t.match(open.out, { storage_location: 'EXTERNAL', external_object_key: `tenant-a/${open.commandId}/master.m3u8`, file_count: open.members.length })
    t.same(open.out.files.map((f: { external_object_key: string }) => f.external_object_key), open.members.map((m) => m.object_key), 'every member\'s key in the customer bucket')
    t.same(await listBucket(s3, bucket, 'playback/'), [], 'nothing is written to the managed bucket for it')

    const closed = await result(privateDestination)
    t.equal(closed.out.storage_url, null, 'a private bucket has no storage_url, as the spec says')
    t.ok(closed.out.files.every((f: { storage_url: string | null }) => f.storage_url === null), 'nor has any member')
    t.same(closed.out.files.map((f: { external_object_key: string }) => f.external_object_key), closed.members.map((m) => m.object_key), 'but every key is there to fetch with the customer\'s own credentials')

    const before = await listBucket(customerS3, customerBucket, '')
    t.same((await call(world, api_key, 'DELETE', `/commands/${open.commandId}/files`)).json(), { deleted: true, files_deleted: 0 }, 'external outputs are never deleted')
    t.same(await listBucket(customerS3, customerBucket, ''), before, 'the customer bucket is untouched')
  })
})
