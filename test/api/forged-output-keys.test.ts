/**
 * A forged SUCCESS, as a compromised ffmpeg beside a runner could publish it
 * on the status stream: it names another tenant's real objects as this
 * command's outputs. Real FerretDB, NATS JetStream and versitygw (a
 * customer's MinIO for destinations), the real status projector and webhook
 * deliverer; the test plays the runners, putting real objects where a runner
 * puts them and publishing events as a runner does.
 */
import { randomBytes } from 'node:crypto'
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { pino } from 'pino'
import t, { type Test } from 'tap'
import { StatusProjector } from '../../api/projector/status-projector.js'
import type { OutputMember } from '../../contracts/status-events.js'
import { keysUnder, listBucket, multiFileResult, publishLikeRunner, putLikeRunner, successEvent } from '../harness/outputs.js'
import { destinationFields, startS3 } from '../harness/s3.js'
import { scratchDir } from '../harness/scratch.js'
import { startReceiver, startWorld, until, type World } from '../webhooks/world.js'

async function call(world: World, apiKey: string, method: 'GET' | 'POST', url: string, payload?: object) {
  return world.api.app.inject({ method, url: `/api/v1${url}`, headers: { 'x-api-key': apiKey }, ...(payload ? { payload } : {}) })
}

async function ended(world: World, apiKey: string, commandId: string) {
  return until(`command ${commandId} ended`, async () => {
    const poll = JSON.parse(await world.poll(apiKey, commandId))
    return poll.status === 'SUCCESS' || poll.status === 'FAILED' ? poll : null
  })
}

async function download(url: string): Promise<Buffer> {
  const res = await fetch(url)
  if (!res.ok) throw new Error(`GET ${url} answered ${res.status}`)
  return Buffer.from(await res.arrayBuffer())
}

/** The projector's log lines, parsed: what an operator would read. */
function capturedLog(): { logger: pino.Logger; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = []
  const logger = pino({ level: 'warn' }, { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) })
  return { logger, lines }
}

t.test('a SUCCESS naming objects outside its own command\'s folder', async (t) => {
  const world = await startWorld(t)
  const log = capturedLog()
  const projector = new StatusProjector({ nats: world.nc, commands: world.api.app.commands, files: world.api.app.files, logger: log.logger })
  await projector.start()
  t.teardown(() => projector.stop())
  const receiver = await startReceiver(t)
  await world.deliverer()
  const s3 = world.api.s3
  const bucket = world.api.s3Bucket
  const js = world.nc.jetstream()
  const dir = await scratchDir(t)

  // The victim: tenant B's command, its outputs stored and reported honestly.
  const victim = await world.api.createAccount('business')
  const victimFiles = join(dir, 'victim')
  await mkdir(join(victimFiles, 'v0'), { recursive: true })
  await writeFile(join(victimFiles, 'master.m3u8'), '#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1\nv0/prog.m3u8\n')
  await writeFile(join(victimFiles, 'v0', 'prog.m3u8'), '#EXTM3U\n#EXTINF:1,\nseg_000.ts\n#EXT-X-ENDLIST\n')
  await writeFile(join(victimFiles, 'v0', 'seg_000.ts'), randomBytes(4000))
  const victimCommand = await world.submit(victim.api_key, { output_files: { out_hls: 'master.m3u8' }, ffmpeg_command: 'ffmpeg -i {{in_video}} {{out_hls}}' })
  const victimMembers = await putLikeRunner(s3, bucket, 'outputs', victimCommand, victimFiles)
  await publishLikeRunner(js, successEvent(victimCommand, { out_hls: multiFileResult({ bucket, storage_location: 'INTERNAL' }, 'master.m3u8', victimMembers) }))
  const victimPoll = await ended(world, victim.api_key, victimCommand)
  t.equal(victimPoll.status, 'SUCCESS', "the victim's honest multi-file command succeeds")
  const victimObjects = await listBucket(s3, bucket, `outputs/${victimCommand}/`)
  t.equal(victimObjects.length, 3)

  /** The victim's objects are all there, unchanged, and their URLs still download their bytes. */
  async function victimIntact(t: Test): Promise<void> {
    t.same(await listBucket(s3, bucket, `outputs/${victimCommand}/`), victimObjects, "the victim's objects are all there, unchanged")
    const out = JSON.parse(await world.poll(victim.api_key, victimCommand)).output_files.out_hls
    const segment = out.files.find((f: { filename: string }) => f.filename === 'v0/seg_000.ts')
    t.ok((await download(segment.storage_url)).equals(await readFile(join(victimFiles, 'v0', 'seg_000.ts'))), "the victim's segment still downloads its bytes")
  }

  // The attacker: tenant A, with a webhook that would carry whatever A's command ends with.
  const attacker = await world.api.createAccount('business')
  await world.putWebhook(attacker.api_key, { url: receiver.url })

  /** Publishes a SUCCESS for `commandId` that reports `members` (someone else's) as its output, and waits for the command to end. */
  async function forge(commandId: string, members: OutputMember[], location: { bucket: string; storage_location: 'INTERNAL' | 'EXTERNAL' } = { bucket, storage_location: 'INTERNAL' }) {
    await publishLikeRunner(js, successEvent(commandId, { out_small: multiFileResult(location, members[0]!.filename, members) }))
    return ended(world, attacker.api_key, commandId)
  }

  t.test("ends the command FAILED with OUTPUT_OUTSIDE_COMMAND_FOLDER, records and signs nothing, and leaves the victim's objects alone", async (t) => {
    const commandId = await world.submit(attacker.api_key)
    const poll = await forge(commandId, victimMembers)
    t.equal(poll.status, 'FAILED')
    t.equal(poll.error_status, 'OUTPUT_OUTSIDE_COMMAND_FOLDER')
    t.match(poll.error_message, `outputs/${commandId}/`, "the message names the command's own folder")
    t.equal(poll.output_files, undefined, 'the result shows no outputs')
    const raw = await world.poll(attacker.api_key, commandId)
    t.notOk(raw.includes(victimCommand), `nothing of the victim's keys is in the attacker's GET: ${raw}`)
    const files = (await call(world, attacker.api_key, 'GET', '/files')).json()
    t.same(files.files, [], "the attacker's account has no file: no URL was signed for the victim's keys")
    await victimIntact(t)

    const webhook = await until("the attacker's webhook", () => receiver.received.find((r) => r.body.includes(commandId)))
    t.equal(JSON.parse(webhook.body).data.status, 'FAILED', 'the webhook says FAILED')
    t.notOk(webhook.body.includes(victimCommand), "and carries none of the victim's keys")

    const warning = log.lines.find((line) => line.command_id === commandId && line.level === 40)
    t.ok(warning, 'a warning names the command')
    t.match(warning, { account_id: attacker.account_id, alias: 'out_small', bucket, object_key: victimMembers[0]!.object_key, msg: /outside its command's folder/ }, 'and the rejected key, for an operator to see the attack')
  })

  t.test("a forged SUCCESS far over the account's storage quota deletes nothing of the victim's", async (t) => {
    const commandId = await world.submit(attacker.api_key)
    // 4 TiB each, past the plan's 1 TiB: before the folder check, the quota's refusal deleted every key the event named.
    const huge = victimMembers.map((member) => ({ ...member, size_bytes: 2 ** 42 }))
    const poll = await forge(commandId, huge)
    t.match(poll, { status: 'FAILED', error_status: 'OUTPUT_OUTSIDE_COMMAND_FOLDER' }, 'refused for its keys, before the quota is asked')
    await victimIntact(t)
  })

  t.test("a forged SUCCESS naming a key that leaves the command's folder only once normalised or decoded is refused too", async (t) => {
    for (const escape of ['..', '%2e%2e']) {
      const commandId = await world.submit(attacker.api_key)
      const sneaky = victimMembers.map((member) => ({ ...member, object_key: `outputs/${commandId}/${escape}/${member.object_key.slice('outputs/'.length)}` }))
      const poll = await forge(commandId, sneaky)
      t.match(poll, { status: 'FAILED', error_status: 'OUTPUT_OUTSIDE_COMMAND_FOLDER', error_message: /'\.\.' part/ }, escape)
    }
    await victimIntact(t)
  })

  t.test("a SUCCESS whose member's filename climbs out of the command's playback folder is refused, and the victim's playable copy is unchanged", async (t) => {
    const commandId = await world.submit(attacker.api_key)
    // A real playlist in the attacker's own folder, reported under a filename that would name the victim's playback copy.
    const own = join(dir, `own-${commandId}`)
    await mkdir(own)
    await writeFile(join(own, 'evil.m3u8'), '#EXTM3U\n#EXTINF:1,\nhttps://attacker.example/seg.ts\n#EXT-X-ENDLIST\n')
    const [stored] = await putLikeRunner(s3, bucket, 'outputs', commandId, own)
    const climbing = { ...stored!, filename: `../../${victimCommand}/out_hls/master.m3u8` }
    const copiesBefore = await listBucket(s3, bucket, `playback/${victimCommand}/`)
    t.not(copiesBefore.length, 0, 'the victim has playable copies')
    t.match(await forge(commandId, [climbing]), { status: 'FAILED', error_status: 'OUTPUT_OUTSIDE_COMMAND_FOLDER', error_message: /not its filename/ })
    t.same(await listBucket(s3, bucket, `playback/${victimCommand}/`), copiesBefore, "the victim's playable copies are unchanged")
    t.same(await listBucket(s3, bucket, `playback/${commandId}/`), [], 'and none was written for the attacker')
    await victimIntact(t)
  })

  t.test('a SUCCESS naming a playlist its own folder does not hold still ends the command, with no playable copy', async (t) => {
    const commandId = await world.submit(attacker.api_key)
    const own = join(dir, `ghost-${commandId}`)
    await mkdir(own)
    await writeFile(join(own, 'seg_000.ts'), randomBytes(1000))
    const [segment] = await putLikeRunner(s3, bucket, 'outputs', commandId, own)
    // Reported, never stored: an honest runner stores every file before its SUCCESS.
    const ghost = { filename: 'ghost.m3u8', object_key: `outputs/${commandId}/ghost.m3u8`, size_bytes: 100, mime_type: null }
    const poll = await forge(commandId, [ghost, segment!])
    t.equal(poll.status, 'SUCCESS', 'the command ends instead of being retried for ever')
    t.same(await listBucket(s3, bucket, `playback/${commandId}/`), [], 'no playable copy was written for a playlist that is not there')
    await victimIntact(t)
  })

  t.test("a destination command's SUCCESS naming a key outside {prefix}/{command_id}/ of its destination is refused", async (t) => {
    const customer = await startS3(t, { server: 'minio' })
    const customerBucket = await customer.createBucket('customer-media')
    const customerS3 = customer.client()
    t.teardown(() => customerS3.destroy())
    const created = await call(world, attacker.api_key, 'POST', '/storage-destinations', { name: 'customer', prefix: 'tenant-a', ...destinationFields(customer, customerBucket) })
    t.equal(created.statusCode, 201, created.body)
    const destination = { storage_destination_id: created.json().storage_destination_id }
    const external = { bucket: customerBucket, storage_location: 'EXTERNAL' as const }
    // Another command's objects under the same prefix of the customer's bucket, as a runner stored them.
    const other = await world.submit(attacker.api_key, destination)
    const otherMembers = await putLikeRunner(customerS3, customerBucket, 'tenant-a', other, victimFiles)
    const before = await listBucket(customerS3, customerBucket, '')

    const commandId = await world.submit(attacker.api_key, destination)
    t.match(await forge(commandId, otherMembers, external), { status: 'FAILED', error_status: 'OUTPUT_OUTSIDE_COMMAND_FOLDER', error_message: `tenant-a/${commandId}/` }, "another command's folder of the destination")
    const elsewhere = await world.submit(attacker.api_key, destination)
    const outsidePrefix = otherMembers.map((member) => ({ ...member, object_key: member.object_key.replace(`tenant-a/${other}/`, `tenant-b/${elsewhere}/`) }))
    t.match(await forge(elsewhere, outsidePrefix, external), { status: 'FAILED', error_status: 'OUTPUT_OUTSIDE_COMMAND_FOLDER' }, "the command's id under another prefix")
    const managedInstead = await world.submit(attacker.api_key, destination)
    t.match(await forge(managedInstead, victimMembers), { status: 'FAILED', error_status: 'OUTPUT_OUTSIDE_COMMAND_FOLDER' }, "the managed bucket's objects for a destination command")
    await victimIntact(t)

    const honest = await world.submit(attacker.api_key, destination)
    const honestMembers = await putLikeRunner(customerS3, customerBucket, 'tenant-a', honest, victimFiles)
    const poll = await forge(honest, honestMembers, external)
    t.equal(poll.status, 'SUCCESS', 'while its own folder is accepted')
    t.same((await keysUnder(customerS3, customerBucket, `tenant-a/${other}/`)).length, otherMembers.length, "and the other command's objects are still there")
    t.same((await listBucket(customerS3, customerBucket, `tenant-a/${other}/`)), before.filter((line) => line.startsWith(`tenant-a/${other}/`)), 'unchanged')
  })
})
