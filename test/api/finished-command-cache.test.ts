/**
 * GET /commands/:id on two API replicas sharing one store and one NATS, as
 * two pods do: each keeps the finished commands it read, and must never
 * answer with a stale record or another account's. Commands end through the
 * real status projector (runner events published on the real stream); the
 * replicas' clocks never move, so a cached answer never expires: whatever a
 * replica learns of a change, it learns from the announcements.
 */
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import type { CommandStartedEvent } from 'mongodb'
import { AccountChanges } from '../../api/accounts/account-changes.js'
import { RetentionSweep } from '../../api/files/retention-sweep.js'
import { ManagedStorage } from '../../api/files/managed-storage.js'
import { createLogger } from '../../api/logger.js'
import { ServiceMetrics } from '../../api/metrics/service-metrics.js'
import { StatusProjector } from '../../api/projector/status-projector.js'
import { buildRepositories } from '../../api/repositories.js'
import { publishStatusEvent } from '../../contracts/status-publisher.js'
import { statusEventId, type StatusEvent, type StatusEventBody } from '../../contracts/status-events.js'
import { eventually } from '../harness/eventually.js'
import { multiFileResult, publishLikeRunner, putLikeRunner, successEvent } from '../harness/outputs.js'
import { scratchDir } from '../harness/scratch.js'
import { startTwoReplicas } from '../harness/two-replicas.js'

const DAY = 86_400_000
const BODY = { input_files: { in_video: 'https://media.example.com/clip.mp4' }, output_files: { out_small: 'small.mp4' }, ffmpeg_command: 'ffmpeg -i {{in_video}} {{out_small}}' }

t.test('finished commands cached on each of two replicas', async (t) => {
  const frozen = new Date('2026-03-01T12:00:00Z')
  const clock = () => frozen
  const metrics = new ServiceMetrics()
  const { nats, natsFor, first, second, secondClient } = await startTwoReplicas(t, clock, { metrics })
  // The second replica's reads of command records, by id.
  const commandReads: string[] = []
  secondClient.on('commandStarted', (event: CommandStartedEvent) => {
    if (event.commandName === 'find' && event.command.find === 'commands') commandReads.push(String((event.command.filter as { _id?: unknown })._id))
  })
  const projectorNats = await natsFor()
  const projector = new StatusProjector({ nats: projectorNats, commands: first.app.commands, files: first.app.files, logger: createLogger('test', 'silent'), now: clock })
  await projector.start()
  t.teardown(() => projector.stop())
  const js = projectorNats.jetstream()
  const dir = await scratchDir(t)

  type Replica = typeof second
  const get = (app: Replica, key: string, commandId: string) => app.inject({ method: 'GET', url: `/api/v1/commands/${commandId}`, headers: { 'x-api-key': key } })
  const submit = async (key: string, extra: object = {}): Promise<string> => {
    const res = await first.app.inject({ method: 'POST', url: '/api/v1/run-ffmpeg-command', headers: { 'x-api-key': key }, payload: { ...BODY, ...extra } })
    if (res.statusCode !== 200) throw new Error(`submit answered ${res.statusCode}: ${res.body}`)
    return res.json<{ command_id: string }>().command_id
  }
  const publish = (commandId: string, body: StatusEventBody) =>
    publishStatusEvent(js, { ...body, command_id: commandId, event_id: statusEventId(commandId, body), emitted_at: new Date().toISOString() } as StatusEvent, { logger: createLogger('test', 'silent') })
  /** Waits until the store (read through the first replica) says `status`. */
  const reaches = (key: string, commandId: string, status: string) =>
    eventually(`command ${commandId} ${status} on the first replica`, async () => (await get(first.app, key, commandId)).json<{ status: string }>().status === status)
  /** A SUCCESS whose output out_small the runner stored in the managed bucket. */
  const succeeded = async (key: string, extra: object = {}): Promise<string> => {
    const commandId = await submit(key, extra)
    const outDir = join(dir, commandId)
    await mkdir(outDir)
    await writeFile(join(outDir, 'small.mp4'), 'video bytes')
    const members = await putLikeRunner(first.s3, first.s3Bucket, 'outputs', commandId, outDir)
    await publishLikeRunner(js, successEvent(commandId, { out_small: multiFileResult({ bucket: first.s3Bucket, storage_location: 'INTERNAL' }, 'small.mp4', members) }))
    await reaches(key, commandId, 'SUCCESS')
    return commandId
  }
  const cacheReads = async () => {
    const text = (await second.inject({ method: 'GET', url: '/metrics' })).body
    return Number(/^ffkube_command_reads_total\{source="cache"\} (\d+)$/m.exec(text)?.[1] ?? 0)
  }
  /** Polls the second replica until `ok` holds for its answer, then checks it holds for the next 20. */
  const secondShows = async (t: Test, request: () => ReturnType<typeof get>, ok: (body: Record<string, unknown>) => boolean, what: string) => {
    await eventually(what, async () => ok((await request()).json()))
    for (let i = 0; i < 20; i++) t.ok(ok((await request()).json()), `${what}: request ${i + 1} after`)
  }
  const outSmall = (body: Record<string, unknown>) => (body.output_files as Record<string, { is_deleted: boolean; storage_url: string | null }>).out_small!

  t.test('a finished command is read from the store once by a replica, then answered from its cache', async (t) => {
    const { api_key } = await first.createAccount('business')
    const commandId = await submit(api_key)
    await publish(commandId, { type: 'FAILED', error_status: 'INPUT_FETCH_FAILED', error_message: 'the input answered 404', ffmpeg_command_run_seconds: null, failed_files: null })
    await reaches(api_key, commandId, 'FAILED')
    const fromStore = (await get(first.app, api_key, commandId)).json()
    const cachedBefore = await cacheReads()
    commandReads.length = 0
    for (let i = 0; i < 10; i++) {
      const res = await get(second, api_key, commandId)
      t.equal(res.statusCode, 200)
      t.same(res.json(), fromStore, `GET ${i + 1} answers what the store holds`)
    }
    t.same(commandReads, [commandId], 'ten GETs, one read of the command')
    t.equal((await cacheReads()) - cachedBefore, 9, 'the other nine counted as cache reads on /metrics')
  })

  t.test('a command still running is read on every GET, so its end shows on a replica as soon as on any other', async (t) => {
    const { api_key } = await first.createAccount('business')
    const commandId = await submit(api_key)
    commandReads.length = 0
    t.equal((await get(second, api_key, commandId)).json().status, 'QUEUED')
    t.equal((await get(second, api_key, commandId)).json().status, 'QUEUED')
    await publish(commandId, { type: 'PROCESSING', stage: 'RUNNING', progress: 40 })
    await reaches(api_key, commandId, 'PROCESSING')
    t.match((await get(second, api_key, commandId)).json(), { status: 'PROCESSING', progress: 40 }, 'the second replica shows it running at once')
    await publish(commandId, { type: 'FAILED', error_status: 'RUNNER_FAILED', error_message: 'ffmpeg exited with 1', ffmpeg_command_run_seconds: 0.5, failed_files: null })
    await reaches(api_key, commandId, 'FAILED')
    t.match((await get(second, api_key, commandId)).json(), { status: 'FAILED', error_status: 'RUNNER_FAILED' }, 'the next GET of the second replica shows the end')
    t.same(commandReads, [commandId, commandId, commandId, commandId], 'each GET of the running command was a store read')
  })

  t.test('another account never gets a command a replica has cached', async (t) => {
    const owner = await first.createAccount('business')
    const other = await first.createAccount('business')
    const commandId = await submit(owner.api_key)
    await publish(commandId, { type: 'FAILED', error_status: 'INPUT_FETCH_FAILED', error_message: 'the input answered 404', ffmpeg_command_run_seconds: null, failed_files: null })
    await reaches(owner.api_key, commandId, 'FAILED')
    t.equal((await get(second, owner.api_key, commandId)).statusCode, 200, 'the owner\'s GET fills the cache')
    t.equal((await get(second, owner.api_key, commandId)).statusCode, 200)
    for (let i = 0; i < 3; i++) t.equal((await get(second, other.api_key, commandId)).statusCode, 404, `the other account's GET ${i + 1}: 404`)
    t.equal((await get(second, owner.api_key, commandId)).json().command_id, commandId, 'and the owner still gets it')
  })

  t.test('an output deleted through one replica shows deleted on the other, and never live after', async (t) => {
    const { api_key } = await first.createAccount('business')
    const commandId = await succeeded(api_key)
    const before = (await get(second, api_key, commandId)).json()
    t.match(outSmall(before), { is_deleted: false, storage_url: /^http/ })
    const cachedBefore = await cacheReads()
    t.same((await get(second, api_key, commandId)).json(), before)
    t.equal((await cacheReads()) - cachedBefore, 1, 'the second replica answers it from its cache')
    const deleted = await first.app.inject({ method: 'DELETE', url: `/api/v1/commands/${commandId}/files`, headers: { 'x-api-key': api_key } })
    t.same(deleted.json(), { deleted: true, files_deleted: 1 })
    await secondShows(t, () => get(second, api_key, commandId), (body) => outSmall(body).is_deleted && outSmall(body).storage_url === null, 'the second replica shows the output deleted')
    t.match(outSmall((await get(first.app, api_key, commandId)).json()), { is_deleted: true, storage_url: null }, 'as the first does')
  })

  t.test('the retention sweep of a worker process reaches the replicas\' caches', async (t) => {
    const { api_key } = await first.createAccount('free')
    const commandId = await succeeded(api_key)
    t.match(outSmall((await get(second, api_key, commandId)).json()), { is_deleted: false })
    t.match(outSmall((await get(second, api_key, commandId)).json()), { is_deleted: false }, 'cached')
    // A worker as api/main.ts builds one: its own repositories, announcing on its own NATS connection; its clock two days on (the free plan keeps one).
    const later = new Date(frozen.getTime() + 2 * DAY)
    const changes = await AccountChanges.open(await natsFor(), createLogger('test', 'silent'), { listen: false })
    const worker = buildRepositories({ db: first.db, storage: new ManagedStorage(first.s3, first.s3Bucket), secretBox: first.secretBox, now: () => later, changes })
    const sweep = new RetentionSweep({ files: worker.files, logger: createLogger('test', 'silent'), now: () => later })
    t.ok((await sweep.sweep()) >= 1, 'the sweep deletes the expired output')
    await secondShows(t, () => get(second, api_key, commandId), (body) => outSmall(body).is_deleted, 'the second replica shows the expired output deleted')
  })

  t.test('a replica cut off from NATS stops answering from what a deletion could change', async (t) => {
    const { api_key } = await first.createAccount('business')
    const commandId = await succeeded(api_key)
    t.match(outSmall((await get(second, api_key, commandId)).json()), { is_deleted: false })
    t.match(outSmall((await get(second, api_key, commandId)).json()), { is_deleted: false }, 'cached')
    await nats.stop!()
    // No replica can hear this deletion: the second must notice it has lost the feed and read the store.
    const deleted = await first.app.inject({ method: 'DELETE', url: `/api/v1/commands/${commandId}/files`, headers: { 'x-api-key': api_key } })
    t.same(deleted.json(), { deleted: true, files_deleted: 1 })
    await secondShows(t, () => get(second, api_key, commandId), (body) => outSmall(body).is_deleted, 'the cut-off replica shows the output deleted')
  })
})
