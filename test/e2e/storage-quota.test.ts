/**
 * The per-plan storage quota through the whole service (local executor,
 * projector, file processor): uploads, a race of two uploads, commands whose
 * outputs would pass it, store-file, refusals at the quota, and deletions
 * that free it. The local key is on the business plan; its quota is set to
 * 1,000,000 bytes here.
 */
import { randomBytes } from 'node:crypto'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { ListObjectsV2Command } from '@aws-sdk/client-s3'
import t from 'tap'
import { makeClip, serveFiles } from '../harness/media.js'
import { scratchDir } from '../harness/scratch.js'
import { Client, serviceEnvironment, startService } from './service.js'

const QUOTA = 1_000_000

t.test('the storage quota: uploads, commands and store-file within it, refused past it, freed by deletion', async (t) => {
  const dir = await scratchDir(t)
  const environment = await serviceEnvironment(t, { STORAGE_QUOTA_BUSINESS_BYTES: String(QUOTA) })
  const [service, clip] = await Promise.all([startService(t, environment), makeClip(join(dir, 'clip.mp4'), { seconds: 1, width: 320, height: 240 })])
  const big = join(dir, 'big.bin')
  await writeFile(big, randomBytes(300_000))
  const media = await serveFiles(t, [clip, big])
  const api = new Client(service)
  const stored = async (): Promise<number> => {
    const usage = await api.request('GET', '/usage?days=1')
    if (usage.status !== 200 || usage.body.storage.quota_bytes !== QUOTA) throw new Error(`GET /usage answered ${usage.status} ${JSON.stringify(usage.body)}`)
    return usage.body.storage.stored_bytes as number
  }
  /** Every object in the managed bucket. */
  const objects = async (): Promise<string[]> => {
    const listed = await environment.s3.client().send(new ListObjectsV2Command({ Bucket: environment.s3.bucket }))
    return (listed.Contents ?? []).map((object) => object.Key ?? '')
  }
  const listedFiles = async (): Promise<string[]> => ((await api.request('GET', '/files?limit=100')).body.files as { file_id: string }[]).map((file) => file.file_id)
  const upload = (bytes: number) => api.upload(randomBytes(bytes), 'data.bin', 'application/octet-stream')
  /** Submits an FFmpeg command on the clip and waits for its end. */
  const runOnClip = async (outputFiles: Record<string, string>, command: string) => {
    const { command_id } = await api.post('/run-ffmpeg-command', { input_files: { in_v: media.url(clip) }, output_files: outputFiles, ffmpeg_command: command })
    return { command_id: command_id as string, done: await api.waitForCommand(command_id) }
  }

  const usage = await api.request('GET', '/usage?days=1')
  t.match(usage, { status: 200, body: { storage: { stored_bytes: 0, quota_bytes: QUOTA } } }, 'nothing stored at first, against the configured quota')
  const first = await upload(400_000)
  t.equal(first.status, 200, JSON.stringify(first.body))
  t.equal(await stored(), 400_000, 'an upload counts its bytes from the moment it is received')

  let winner = ''
  t.test('two uploads that each fit but not together: exactly one lands', async (t) => {
    const answers = await Promise.all([upload(400_000), upload(400_000)])
    t.same(answers.map((answer) => answer.status).sort(), [200, 403], JSON.stringify(answers.map((answer) => answer.body)))
    const refused = answers.find((answer) => answer.status === 403)!
    // Refused by the reservation when both streamed at once, or while it streamed when the other had landed first.
    t.match(refused.body, { error: 'STORAGE_QUOTA_EXCEEDED', message: /^file: (it is .*\(400000 bytes\).*\(1000000 bytes\)|larger than the .*\(200000 bytes\) left).*nothing was stored$/ })
    winner = answers.find((answer) => answer.status === 200)!.body.file_id
    t.equal(await stored(), 800_000)
    t.same((await listedFiles()).sort(), [first.body.file_id, winner].sort(), 'only the two that fit are files')
    t.equal((await objects()).filter((key) => key.startsWith('uploads/')).length, 2, 'and only their bytes are in the bucket')
  })

  t.test('an upload larger than the room left is refused while it streams, and leaves nothing', async (t) => {
    const refused = await upload(300_000)
    t.equal(refused.status, 403)
    t.match(refused.body, { error: 'STORAGE_QUOTA_EXCEEDED', message: /^file: larger than the .*\(200000 bytes\) left of the plan's storage quota; nothing was stored$/ })
    t.equal(await stored(), 800_000)
    t.equal((await objects()).filter((key) => key.startsWith('uploads/')).length, 2)
  })

  t.test('a command whose outputs would pass the room left is refused by its runner, which stores none of them', async (t) => {
    // Raw video: 320 x 240 x 1.5 bytes a frame, 25 frames, far past the 200,000 bytes left.
    const { command_id, done } = await runOnClip({ out_raw: 'raw.nut', out_small: 'small.png' }, 'ffmpeg -i {{in_v}} -c:v rawvideo -an {{out_raw}} -frames:v 1 -vf scale=16:-2 {{out_small}}')
    t.equal(done.status, 'FAILED', JSON.stringify(done))
    t.equal(done.error_status, 'STORAGE_QUOTA_EXCEEDED')
    // The runner's words (contracts/storage-room.ts): it was told the room at hand-off and refused before storing.
    t.match(done.error_message, /^the outputs hold .* more than the .*\(200000 bytes\) the account had left of its plan's storage quota when the command started.*none of the outputs was stored$/)
    t.notOk(done.output_files, 'no outputs in the result')
    t.equal(await stored(), 800_000, 'nothing counted')
    t.same((await objects()).filter((key) => key.includes(command_id)), [], 'none of its objects is left in the bucket')
    t.equal((await listedFiles()).length, 2, 'no output is a file')
  })

  t.test('a numbered sequence past the quota ends FAILED with every one of its files deleted', async (t) => {
    // Three 320 x 240 BMP frames of ~230 kB, one output of three files, past the 200,000 bytes left: its files go all together.
    const { command_id, done } = await runOnClip({ out_frames: 'frame_%03d.bmp' }, 'ffmpeg -i {{in_v}} -frames:v 3 {{out_frames}}')
    t.match(done, { status: 'FAILED', error_status: 'STORAGE_QUOTA_EXCEEDED' }, JSON.stringify(done))
    t.equal(await stored(), 800_000)
    t.same((await objects()).filter((key) => key.includes(command_id)), [], 'no frame is left in the bucket')
  })

  t.test('two commands whose outputs each fit the room left but not together: exactly one keeps them', async (t) => {
    // A 200 x 200 BMP is 120,054 bytes: one fits in the 200,000 left, two do not. Told the same room at
    // hand-off, both runners may store theirs; the reservation at the end lets one land.
    const command = 'ffmpeg -i {{in_v}} -frames:v 1 -vf scale=200:200 {{out_frame}}'
    const [a, b] = await Promise.all([runOnClip({ out_frame: 'a.bmp' }, command), runOnClip({ out_frame: 'b.bmp' }, command)])
    const ends = [a, b].map(({ done }) => `${done.status}${done.error_status ? ` ${done.error_status}` : ''}`).sort()
    t.same(ends, ['FAILED STORAGE_QUOTA_EXCEEDED', 'SUCCESS'], JSON.stringify([a.done, b.done]))
    const [kept, refused] = a.done.status === 'SUCCESS' ? [a, b] : [b, a]
    t.equal(await stored(), 800_000 + 120_054, 'the one kept is counted')
    t.same((await objects()).filter((key) => key.includes(refused.command_id)), [], "the other's objects are not in the bucket")
    t.match(await api.request('DELETE', `/commands/${kept.command_id}/files`), { status: 200, body: { files_deleted: 1 } })
    t.equal(await stored(), 800_000, 'freed again')
  })

  t.test('a command whose outputs fit is counted, and deleting its files frees them', async (t) => {
    const { command_id, done } = await runOnClip({ out_small: 'small.png' }, 'ffmpeg -i {{in_v}} -frames:v 1 -vf scale=32:-2 {{out_small}}')
    t.equal(done.status, 'SUCCESS', JSON.stringify(done))
    const bytes = Math.round(done.output_files.out_small.size_mbytes * 1024 * 1024)
    t.ok(bytes > 0)
    t.equal(await stored(), 800_000 + bytes, 'the output counted with its size')
    const deleted = await api.request('DELETE', `/commands/${command_id}/files`)
    t.match(deleted, { status: 200, body: { files_deleted: 1 } })
    t.equal(await stored(), 800_000, 'freed')
  })

  t.test('a stored URL past the room left ends FAILED and stores nothing', async (t) => {
    const { file_id } = await api.post('/files/store-file', { file_url: media.url(big) })
    const file = await api.waitForFile(file_id)
    t.match(file, { status: 'FAILED', error_status: 'STORAGE_QUOTA_EXCEEDED', error_message: /^file_url: the file is .*\(300000 bytes\).*\(200000 bytes\) left.*nothing was stored$/ })
    t.equal(await stored(), 800_000)
    t.same((await objects()).filter((key) => key.includes(file_id)), [])
  })

  t.test('at the quota, commands, store-file and uploads are refused before anything runs', async (t) => {
    const filler = await upload(200_000)
    t.equal(filler.status, 200, JSON.stringify(filler.body))
    t.equal(await stored(), QUOTA)
    const command = await api.request('POST', '/run-ffmpeg-command', {
      input_files: { in_v: media.url(clip) },
      output_files: { out_small: 'small.png' },
      ffmpeg_command: 'ffmpeg -i {{in_v}} -frames:v 1 {{out_small}}',
    })
    t.match(command, { status: 403, body: { error: 'STORAGE_QUOTA_EXCEEDED', message: /^output_files: the account stores .*\(1000000 bytes\), all of the plan's storage quota/ } })
    const storeFile = await api.request('POST', '/files/store-file', { file_url: media.url(clip) })
    t.match(storeFile, { status: 403, body: { error: 'STORAGE_QUOTA_EXCEEDED', message: /^file_url: / } })
    const uploaded = await upload(1)
    t.match(uploaded, { status: 403, body: { error: 'STORAGE_QUOTA_EXCEEDED', message: /^file: the account stores/ } })
    t.equal((await api.request('GET', '/commands')).body.commands.length, 5, 'no command was recorded (the five above only)')

    t.equal((await api.request('DELETE', `/files/${winner}`)).status, 200)
    t.equal(await stored(), QUOTA - 400_000, 'a deleted upload frees its bytes')
    t.equal((await upload(400_000)).status, 200, 'and the room is usable again')
  })
})
