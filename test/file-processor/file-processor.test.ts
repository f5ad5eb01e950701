import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { PutObjectCommand } from '@aws-sdk/client-s3'
import { MongoClient, type Db } from 'mongodb'
import t from 'tap'
import { systemSleep, type Sleep } from '../../api/clock.js'
import { FileProcessor, type FileProcessorOptions } from '../../api/file-processor/file-processor.js'
import { FileQueue } from '../../api/file-processor/file-queue.js'
import { newPendingFile, type FileDocument } from '../../api/files/file-document.js'
import { uploadObjectKey } from '../../api/files/managed-storage.js'
import { resolveTool } from '../../api/executors/tool-paths.js'
import { createLogger } from '../../api/logger.js'
import { startApi, type TestApi } from '../harness/api.js'
import { makeClip, serveFiles } from '../harness/media.js'
import { scratchDir, type Teardown } from '../harness/scratch.js'
import { until } from '../webhooks/world.js'

const HOUR = 3600_000

/** An uploaded object and its pending record, as POST /files/upload leaves them (without a queue entry). */
async function pendingUpload(api: TestApi, fileId: string, now: Date): Promise<void> {
  const key = uploadObjectKey('acc_1', fileId, 'notes.txt')
  await api.s3.send(new PutObjectCommand({ Bucket: api.s3Bucket, Key: key, Body: 'not media', ContentType: 'text/plain' }))
  const doc = newPendingFile({ fileId, accountId: 'acc_1', filename: 'notes.txt', storeType: 'UPLOAD', objectKey: key, originalFileUrl: null, mimeType: 'text/plain' }, now)
  await api.db.collection<FileDocument>('files').insertOne(doc)
}

/** A processor that polls only when told to: its queue every hour, `files` every hour after the scan at start. */
async function startProcessor(t: Teardown, api: TestApi, overrides: Partial<FileProcessorOptions> = {}): Promise<FileProcessor> {
  const processor = new FileProcessor({
    db: api.db,
    s3: api.s3,
    bucket: api.s3Bucket,
    logger: createLogger('test', 'silent'),
    dataDir: await scratchDir(t),
    ffprobePath: resolveTool('ffprobe'),
    allowPrivateNetworks: true,
    pollIntervalMs: HOUR,
    recoveryIntervalMs: HOUR,
    ...overrides,
  })
  processor.start()
  t.teardown(() => processor.stop())
  return processor
}

/**
 * A connection to the test database that notes every query on `files` by
 * anything but `_id` alone: a full collection scan on FerretDB 1.x.
 */
async function watchedDb(t: Teardown, api: TestApi): Promise<{ db: Db; scans: unknown[] }> {
  const client = await MongoClient.connect(api.mongo.url, { monitorCommands: true })
  t.teardown(() => client.close())
  const scans: unknown[] = []
  client.on('commandStarted', ({ command }) => {
    const filter = (command.filter ?? {}) as Record<string, unknown>
    if (command.find === 'files' && Object.keys(filter).join() !== '_id') scans.push(filter)
  })
  return { db: client.db(api.mongo.dbName), scans }
}

/** A sleep that reports when the processor first goes to sleep: its scan at start and first round are done. */
function sleepWatch(): { sleep: Sleep; asleep: Promise<void> } {
  let firstSleep = () => {}
  const asleep = new Promise<void>((resolve) => (firstSleep = resolve))
  return {
    asleep,
    sleep: (ms, signal) => {
      firstSleep()
      return systemSleep(ms, signal)
    },
  }
}

/** POST /files/upload and POST /files/store-file for `clip`, as a client sends them; returns both file ids. */
async function acceptBoth(api: TestApi, clip: string, clipUrl: string): Promise<string[]> {
  const { api_key } = await api.createAccount('free')
  const form = new FormData()
  form.append('file', new Blob([await readFile(clip)], { type: 'video/mp4' }), 'clip.mp4')
  const request = new Request('http://ffkube.test/', { method: 'POST', body: form })
  const uploaded = await api.app.inject({
    method: 'POST',
    url: '/api/v1/files/upload',
    headers: { 'x-api-key': api_key, 'content-type': request.headers.get('content-type')! },
    payload: Buffer.from(await request.arrayBuffer()),
  })
  const fetched = await api.app.inject({ method: 'POST', url: '/api/v1/files/store-file', headers: { 'x-api-key': api_key }, payload: { file_url: clipUrl } })
  return [uploaded, fetched].map((res) => {
    if (res.statusCode !== 200) throw new Error(`${res.statusCode}: ${res.body}`)
    return (res.json() as { file_id: string }).file_id
  })
}

const stored = (api: TestApi, fileId: string) => async () => {
  const file = await api.db.collection<FileDocument>('files').findOne({ _id: fileId })
  return file?.status === 'STORED' ? file : null
}

t.test('a queued file is finished on a nudge, without a scan of files or a wait for the poll', async (t) => {
  const api = await startApi(t)
  const { sleep, asleep } = sleepWatch()
  const processor = await startProcessor(t, api, { sleep })
  // The scan at start has found nothing and the processor sleeps for an hour: queue a file as the API would, and nudge.
  await asleep
  await pendingUpload(api, 'file_nudged', new Date())
  await new FileQueue(api.db).enqueue('file_nudged', new Date())
  processor.nudge()
  const file = await until('the file stored', stored(api, 'file_nudged'), 10_000)
  t.match(file, { status: 'STORED', processing: { state: 'done' }, storage_url: /^http/ })
  await until('its queue entry and lease gone', async () => {
    const entries = await api.db.collection('file_queue').countDocuments({})
    const leases = await api.db.collection('file_leases').countDocuments({})
    return entries === 0 && leases === 0
  })
  t.pass('the queue and the leases hold only files in flight')
})

t.test('a pending file without a queue entry (a crash before the entry, or an API that writes none) is found by the recovery scan', async (t) => {
  const api = await startApi(t)
  await pendingUpload(api, 'file_orphan', new Date())
  await startProcessor(t, api)
  t.match(await until('the file stored', stored(api, 'file_orphan'), 10_000), { status: 'STORED' })
})

t.test('a file whose processor died is left to its lease, then finished by another', async (t) => {
  const api = await startApi(t)
  let now = Date.parse('2026-03-01T00:00:00Z')
  const clock = () => new Date(now)
  await pendingUpload(api, 'file_held', clock())
  const heldUntil = new Date(now + 15 * 60_000)
  await api.db.collection('file_leases').insertOne({ _id: 'file_held' as never, file_id: 'file_held', expires_at: heldUntil })
  await new FileQueue(api.db).enqueue('file_held', clock())
  const processor = await startProcessor(t, api, { now: clock })
  const entry = await until('the entry put off until the lease ends', async () => {
    const e = await api.db.collection<{ _id: string; due_at: Date }>('file_queue').findOne({ _id: 'file_held' })
    return e && e.due_at.getTime() === heldUntil.getTime() ? e : null
  })
  t.ok(entry, 'put off')
  t.match(await api.db.collection<FileDocument>('files').findOne({ _id: 'file_held' }), { status: 'PROCESSING' }, 'untouched while the lease holds')
  now = heldUntil.getTime() + 1
  processor.nudge()
  t.match(await until('the file stored', stored(api, 'file_held'), 10_000), { status: 'STORED' })
})

t.test('an upload and a store-file request are queued by the API and stored on its nudge, without a scan of files', async (t) => {
  // The processor needs the app's database, so the hook is pointed at it once it exists.
  let nudge = () => {}
  const api = await startApi(t, { onFilesQueued: () => nudge() })
  const clip = await makeClip(join(await scratchDir(t), 'clip.mp4'), { seconds: 1, width: 320, height: 240 })
  const media = await serveFiles(t, [clip])
  const watched = await watchedDb(t, api)
  const { sleep, asleep } = sleepWatch()
  const processor = await startProcessor(t, api, { db: watched.db, sleep })
  nudge = () => processor.nudge()
  await asleep
  t.equal(watched.scans.length, 1, 'the recovery scan at start, then an hour of sleep')

  const ids = await acceptBoth(api, clip, media.url(clip))
  for (const fileId of ids) {
    t.match(await until(`${fileId} stored`, stored(api, fileId), 20_000), { status: 'STORED', width: 320, storage_url: /^http/ }, fileId)
  }
  t.equal(watched.scans.length, 1, 'no scan of files since')
  await until('the queue empty', async () => (await api.db.collection('file_queue').countDocuments({})) === 0)
})

t.test('a processor no nudge reaches (another process) finds a queued file at its next poll of the queue', async (t) => {
  const api = await startApi(t)
  const clip = await makeClip(join(await scratchDir(t), 'clip.mp4'), { seconds: 1, width: 320, height: 240 })
  const media = await serveFiles(t, [clip])
  const watched = await watchedDb(t, api)
  const { sleep, asleep } = sleepWatch()
  await startProcessor(t, api, { db: watched.db, sleep, pollIntervalMs: 100 })
  await asleep

  const ids = await acceptBoth(api, clip, media.url(clip))
  for (const fileId of ids) t.match(await until(`${fileId} stored`, stored(api, fileId), 20_000), { status: 'STORED' }, fileId)
  t.equal(watched.scans.length, 1, 'only the recovery scan at start: the polls read file_queue')
})
