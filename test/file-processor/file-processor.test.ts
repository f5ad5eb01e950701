import { readFile } from 'node:fs/promises'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import { HeadObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3'
import { pino } from 'pino'
import t from 'tap'
import { systemSleep, type Clock, type Sleep } from '../../api/clock.js'
import { FileProcessor, type FileProcessorOptions } from '../../api/file-processor/file-processor.js'
import { newPendingFile, type FileDocument } from '../../api/files/file-document.js'
import { ManagedStorage, uploadObjectKey } from '../../api/files/managed-storage.js'
import { resolveTool } from '../../api/executors/tool-paths.js'
import { createLogger, type Logger } from '../../api/logger.js'
import { buildRepositories } from '../../api/repositories.js'
import type { FileRepository } from '../../api/files/file-repository.js'
import { startApi, type TestApi } from '../harness/api.js'
import { makeClip, serveFiles } from '../harness/media.js'
import { scratchDir, type Teardown } from '../harness/scratch.js'
import { until } from '../webhooks/world.js'

const HOUR = 3600_000
const LEASE = 15 * 60_000

/** An uploaded object and its waiting record, as POST /files/upload leaves them. */
async function pendingUpload(api: TestApi, fileId: string, now: Date): Promise<FileDocument> {
  const key = uploadObjectKey('acc_1', fileId, 'notes.txt')
  await api.s3.send(new PutObjectCommand({ Bucket: api.s3Bucket, Key: key, Body: 'not media', ContentType: 'text/plain' }))
  const doc = newPendingFile({ fileId, accountId: 'acc_1', filename: 'notes.txt', storeType: 'UPLOAD', objectKey: key, originalFileUrl: null, mimeType: 'text/plain', expiresAt: null }, now)
  await api.db.collection<FileDocument>('files').insertOne(doc)
  return doc
}

/** The file repository of another worker process on the same database, with its own clock. */
function workerFiles(api: TestApi, now?: Clock): FileRepository {
  return buildRepositories({ db: api.db, storage: new ManagedStorage(api.s3, api.s3Bucket), secretBox: api.secretBox, now }).files
}

/** A processor that polls only when told to (every hour otherwise). */
async function startProcessor(t: Teardown, api: TestApi, overrides: Partial<FileProcessorOptions> = {}): Promise<FileProcessor> {
  const processor = new FileProcessor({
    files: workerFiles(api, overrides.now),
    logger: createLogger('test', 'silent'),
    dataDir: await scratchDir(t),
    ffprobePath: resolveTool('ffprobe'),
    allowPrivateNetworks: true,
    pollIntervalMs: HOUR,
    ...overrides,
  })
  processor.start()
  t.teardown(() => processor.stop())
  return processor
}

/** A sleep that reports when the processor first goes to sleep: its first round is done. */
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

/** A logger whose lines the test reads: which processor said what about which file. */
function recordingLogger(): { logger: Logger; lines: { msg: string; file_id?: string; processor?: string }[] } {
  const lines: { msg: string; file_id?: string; processor?: string }[] = []
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n')) if (line) lines.push(JSON.parse(line))
      done()
    },
  })
  return { logger: pino({ level: 'info' }, sink), lines }
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


t.test('a waiting file is finished on a nudge, without a wait for the poll', async (t) => {
  const api = await startApi(t)
  const { sleep, asleep } = sleepWatch()
  const processor = await startProcessor(t, api, { sleep })
  // The first round has found nothing and the processor sleeps for an hour: record a file as the API would, and nudge.
  await asleep
  await pendingUpload(api, 'file_nudged', new Date())
  processor.nudge()
  const file = await until('the file stored', stored(api, 'file_nudged'), 10_000)
  t.match(file, { status: 'STORED', storage_url: /^http/, processing_state: 'done', processing_claim: null, processing_attempts: 1 })
})

t.test('two processors on one database finish each waiting file exactly once, and take over a file whose holder died when its lease ends', async (t) => {
  const api = await startApi(t)
  let now = Date.parse('2026-03-01T00:00:00Z')
  const clock = () => new Date(now)
  const ids = ['file_a', 'file_b', 'file_c', 'file_d', 'file_e']
  // Due first, so the processor that dies takes it.
  await pendingUpload(api, 'file_orphaned', new Date(now - 1_000))
  for (const id of ids) await pendingUpload(api, id, clock())
  // A processor that claims the file and dies before finishing it: nothing but its lease is left.
  const dead = workerFiles(api, clock)
  const deadClaim = await dead.claimProcessing(clock(), LEASE)
  t.equal(deadClaim?.doc._id, 'file_orphaned', 'the dead processor held file_orphaned')

  const { logger, lines } = recordingLogger()
  const processors = await Promise.all(
    ['one', 'two'].map(async (name) => startProcessor(t, api, { now: clock, logger: logger.child({ processor: name }), leaseMs: LEASE })),
  )
  for (const processor of processors) processor.nudge()
  for (const id of ids) await until(`${id} stored`, stored(api, id), 20_000)
  t.match(await api.db.collection<FileDocument>('files').findOne({ _id: 'file_orphaned' }), { status: 'PROCESSING', processing_attempts: 1 }, 'untouched while the lease holds')

  now += LEASE + 1
  for (const processor of processors) processor.nudge()
  for (const id of [...ids, 'file_orphaned']) await until(`${id} stored`, stored(api, id), 20_000)
  for (const processor of processors) await processor.stop()

  const storedBy = new Map<string, string[]>()
  for (const line of lines) if (line.msg === 'file stored' && line.file_id) storedBy.set(line.file_id, [...(storedBy.get(line.file_id) ?? []), line.processor ?? '?'])
  for (const id of [...ids, 'file_orphaned']) t.equal(storedBy.get(id)?.length, 1, `${id} stored once, by processor ${storedBy.get(id)?.join()}`)
  const files = await api.db.collection<FileDocument>('files').find({ _id: { $in: [...ids, 'file_orphaned'] } }).toArray()
  for (const file of files) t.equal(file.processing_attempts, file._id === 'file_orphaned' ? 2 : 1, `${file._id}: claimed once per holder`)

  // The dead processor comes back and writes its result: the lease it lost lets it write nothing.
  t.equal(await dead.finishProcessing(deadClaim!, { status: 'FAILED', error_status: 'INTERNAL_ERROR', error_message: 'late' }, clock()), false, 'the late finish is refused')
  t.match(await api.db.collection<FileDocument>('files').findOne({ _id: 'file_orphaned' }), { status: 'STORED', error_status: null })
})

/** A sleep the test ends: each call waits until fire() names its length (or its signal aborts). */
function heldSleeps(): { sleep: Sleep; waiting(ms: number): boolean; fire(ms: number): void } {
  const pending: { ms: number; wake: () => void }[] = []
  return {
    sleep: (ms, signal) =>
      new Promise<void>((resolve) => {
        const entry = { ms, wake: resolve }
        pending.push(entry)
        signal.addEventListener('abort', () => {
          pending.splice(pending.indexOf(entry), 1)
          resolve()
        })
      }),
    waiting: (ms) => pending.some((entry) => entry.ms === ms),
    fire: (ms) => {
      for (const entry of pending.filter((e) => e.ms === ms)) {
        pending.splice(pending.indexOf(entry), 1)
        entry.wake()
      }
    },
  }
}

/** A loopback server whose one file arrives only once release() is called: a download that outlasts a lease. */
async function slowServer(t: Teardown, file: string): Promise<{ url: string; requested: Promise<void>; release(): void }> {
  const bytes = await readFile(file)
  let requested = () => {}
  const asked = new Promise<void>((resolve) => (requested = resolve))
  let release = () => {}
  const released = new Promise<void>((resolve) => (release = resolve))
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'video/mp4', 'content-length': bytes.length })
    res.write(bytes.subarray(0, 100))
    requested()
    void released.then(() => res.end(bytes.subarray(100)))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())))
  const { port } = server.address() as AddressInfo
  return { url: `http://127.0.0.1:${port}/slow.mp4`, requested: asked, release }
}

t.test('a download that outlasts the lease keeps its file: the processor extends the lease while it works', async (t) => {
  const api = await startApi(t)
  let now = Date.parse('2026-03-01T00:00:00Z')
  const clock = () => new Date(now)
  const start = now
  const clip = await makeClip(join(await scratchDir(t), 'clip.mp4'), { seconds: 1, width: 320, height: 240 })
  const source = await slowServer(t, clip)
  const doc = newPendingFile({ fileId: 'file_slow', accountId: 'acc_1', filename: 'slow.mp4', storeType: 'STORED_FILE', objectKey: null, originalFileUrl: source.url, mimeType: null, expiresAt: null }, clock())
  await api.db.collection<FileDocument>('files').insertOne(doc)
  const sleeps = heldSleeps()
  await startProcessor(t, api, { now: clock, sleep: sleeps.sleep, leaseMs: LEASE })
  // Teardowns run last-added first: a failed test ends the download before the processor's stop waits for it.
  t.teardown(() => source.release())
  await source.requested
  await until('the lease keeper waiting', () => sleeps.waiting(LEASE / 3))

  // A third of the lease later the keeper extends it, to a full lease from then.
  now = start + LEASE / 3
  sleeps.fire(LEASE / 3)
  const extendedTo = start + LEASE / 3 + LEASE
  await until('the lease extended', async () => (await api.db.collection<FileDocument>('files').findOne({ _id: 'file_slow' }))?.processing_due_at?.getTime() === extendedTo)

  // Past the first lease's end, another processor finds the file held.
  now = start + LEASE + 1
  const other = workerFiles(api, clock)
  t.equal(await other.claimProcessing(clock(), LEASE), null, 'not taken over')

  source.release()
  t.match(await until('the file stored', stored(api, 'file_slow'), 20_000), { status: 'STORED', width: 320, processing_attempts: 1 })
})

t.test('a file deleted while its download runs is not stored afterwards, and what the processor stored is removed', async (t) => {
  const api = await startApi(t)
  const { account_id, api_key } = await api.createAccount('free')
  const clip = await makeClip(join(await scratchDir(t), 'clip.mp4'), { seconds: 1, width: 320, height: 240 })
  const source = await slowServer(t, clip)
  const doc = newPendingFile({ fileId: 'file_gone', accountId: account_id, filename: 'slow.mp4', storeType: 'STORED_FILE', objectKey: null, originalFileUrl: source.url, mimeType: null, expiresAt: null }, new Date())
  await api.db.collection<FileDocument>('files').insertOne(doc)
  const { logger, lines } = recordingLogger()
  await startProcessor(t, api, { logger })
  t.teardown(() => source.release())
  await source.requested

  const deleted = await api.app.inject({ method: 'DELETE', url: '/api/v1/files/file_gone', headers: { 'x-api-key': api_key } })
  t.equal(deleted.statusCode, 200, deleted.body)
  source.release()

  const discarded = await until('the processor to discard what it stored', () => lines.find((line) => line.file_id === 'file_gone' && line.msg.startsWith('file deleted while it was processed')))
  const key = (discarded as { object_key?: string }).object_key
  t.ok(key, 'the processor names the object it stored')
  await t.rejects(api.s3.send(new HeadObjectCommand({ Bucket: api.s3Bucket, Key: key })), 'no bytes left in the bucket')
  const record = await api.db.collection<FileDocument>('files').findOne({ _id: 'file_gone' })
  t.match(record, { is_deleted: true, storage_url: null }, 'the record stays deleted, with no storage_url')
  t.not(record?.status, 'STORED', 'never shown as stored')
  const again = await api.app.inject({ method: 'GET', url: '/api/v1/files/file_gone', headers: { 'x-api-key': api_key } })
  t.match(again.json(), { is_deleted: true, storage_url: null })
})

t.test('an upload and a store-file request are recorded by the API and stored on its nudge', async (t) => {
  // The processor needs the app's database, so the hook is pointed at it once it exists.
  let nudge = () => {}
  const api = await startApi(t, { onFilesQueued: () => nudge() })
  const clip = await makeClip(join(await scratchDir(t), 'clip.mp4'), { seconds: 1, width: 320, height: 240 })
  const media = await serveFiles(t, [clip])
  const { sleep, asleep } = sleepWatch()
  const processor = await startProcessor(t, api, { sleep })
  nudge = () => processor.nudge()
  await asleep

  const ids = await acceptBoth(api, clip, media.url(clip))
  for (const fileId of ids) {
    t.match(await until(`${fileId} stored`, stored(api, fileId), 20_000), { status: 'STORED', width: 320, storage_url: /^http/ }, fileId)
  }
})

t.test('a processor no nudge reaches (another process) finds a waiting file at its next poll', async (t) => {
  const api = await startApi(t)
  const clip = await makeClip(join(await scratchDir(t), 'clip.mp4'), { seconds: 1, width: 320, height: 240 })
  const media = await serveFiles(t, [clip])
  const { sleep, asleep } = sleepWatch()
  await startProcessor(t, api, { sleep, pollIntervalMs: 100 })
  await asleep

  const ids = await acceptBoth(api, clip, media.url(clip))
  for (const fileId of ids) t.match(await until(`${fileId} stored`, stored(api, fileId), 20_000), { status: 'STORED' }, fileId)
})
