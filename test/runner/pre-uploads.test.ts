/**
 * Storing a multi-file output's settled files while ffmpeg runs
 * (upload/pre-uploads.ts), on real versitygw, with the folder changed by the test
 * the way ffmpeg changes it: a file rewritten after it was sent (a playlist),
 * a file deleted (hls delete_segments), a new one. The final upload sends
 * only what is new or changed, deletes what is gone, and a failed command
 * deletes everything sent early. Early sends stop at the file cap and the
 * storage room.
 */
import { GetObjectCommand, ListObjectsV2Command } from '@aws-sdk/client-s3'
import { mkdir, rm, utimes, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { readRunnerConfig } from '../../runner-image/runner/config.js'
import { PreUploads } from '../../runner-image/runner/upload/pre-uploads.js'
import { openStore, uploadOutputs, type FileToUpload } from '../../runner-image/runner/upload/s3-upload.js'
import { uploadTargetFor } from '../../runner-image/runner/upload/upload-target.js'
import { startS3 } from '../harness/s3.js'
import { scratchDir } from '../harness/scratch.js'
import { specOf } from './harness.js'

t.test('files stored while ffmpeg runs, completed by the final upload', async (t) => {
  const s3 = await startS3(t)
  const client = s3.client()
  t.teardown(() => client.destroy())
  const env = { S3_ENDPOINT: s3.endpoint, S3_BUCKET: s3.bucket, S3_REGION: s3.region, S3_FORCE_PATH_STYLE: 'true', S3_ACCESS_KEY_ID: s3.accessKeyId, S3_SECRET_ACCESS_KEY: s3.secretAccessKey }
  const keysOf = async (commandId: string) =>
    ((await client.send(new ListObjectsV2Command({ Bucket: s3.bucket, Prefix: `outputs/${commandId}/` }))).Contents ?? []).map((o) => o.Key as string).sort()
  const bodyOf = async (key: string) => (await client.send(new GetObjectCommand({ Bucket: s3.bucket, Key: key }))).Body!.transformToString()

  /** A work dir with out_hls's folder, its files' mtimes a minute old (settled). */
  async function workWith(names: Record<string, string>) {
    const work = await scratchDir(t)
    await mkdir(join(work, 'outputs', 'out_hls'), { recursive: true })
    const old = new Date(Date.now() - 60_000)
    for (const [name, body] of Object.entries(names)) {
      await writeFile(join(work, 'outputs', 'out_hls', name), body)
      await utimes(join(work, 'outputs', 'out_hls', name), old, old)
    }
    return work
  }
  const file = (name: string): FileToUpload => ({ alias: 'out_hls', filename: name, path: `outputs/out_hls/${name}`, contentType: null })
  const folders = [{ alias: 'out_hls', path: 'outputs/out_hls' }]

  t.test('the final upload sends what changed or is new, and deletes what is gone', async (t) => {
    const spec = specOf({})
    const target = uploadTargetFor(spec, readRunnerConfig(env), env)
    const work = await workWith({ 'playlist.m3u8': 'v1', 'seg_000.ts': 'zero', 'seg_001.ts': 'one' })
    const early = new PreUploads(() => openStore(target, spec.commandId), work, 100)
    t.teardown(() => early.close())
    await early.offer(folders)
    // The three settled files go up in the background: wait until the bucket has them.
    while ((await keysOf(spec.commandId)).length < 3) await new Promise((resolve) => setTimeout(resolve, 20))
    // ffmpeg goes on: the playlist is rewritten, seg_000 deleted (delete_segments), seg_002 written.
    await writeFile(join(work, 'outputs', 'out_hls', 'playlist.m3u8'), 'v2')
    await rm(join(work, 'outputs', 'out_hls', 'seg_000.ts'))
    await writeFile(join(work, 'outputs', 'out_hls', 'seg_002.ts'), 'two')
    const final = [file('playlist.m3u8'), file('seg_001.ts'), file('seg_002.ts')]
    const settled = await early.settle(final)
    t.same(settled.todo.map((f) => f.filename), ['playlist.m3u8', 'seg_002.ts'], 'the rewritten and the new file are to be sent, the unchanged one not')
    t.same(settled.stale, [`outputs/${spec.commandId}/seg_000.ts`], 'the deleted file’s object is stale')
    t.same(await keysOf(spec.commandId), ['playlist.m3u8', 'seg_000.ts', 'seg_001.ts'].map((n) => `outputs/${spec.commandId}/${n}`), 'what was settled went up early')
    const keys = await uploadOutputs(target, spec.commandId, work, final, early)
    t.same(Object.keys(keys).sort(), ['playlist.m3u8', 'seg_001.ts', 'seg_002.ts'])
    t.same(await keysOf(spec.commandId), ['playlist.m3u8', 'seg_001.ts', 'seg_002.ts'].map((n) => `outputs/${spec.commandId}/${n}`), 'the bucket holds exactly the final files')
    t.equal(await bodyOf(`outputs/${spec.commandId}/playlist.m3u8`), 'v2', 'the rewritten playlist was sent again')
    t.equal(await bodyOf(`outputs/${spec.commandId}/seg_001.ts`), 'one')
  })

  t.test('a file sent early is not sent again while ffmpeg runs: the final upload sends its last version', async (t) => {
    const spec = specOf({})
    const target = uploadTargetFor(spec, readRunnerConfig(env), env)
    const work = await workWith({ 'playlist.m3u8': 'v1' })
    const sent: string[] = []
    // The real store, told of each early PUT.
    const early = new PreUploads(
      async () => {
        const store = await openStore(target, spec.commandId)
        return { ...store, putBytes: (file, body) => (sent.push(body.toString()), store.putBytes(file, body)) }
      },
      work,
      100,
    )
    t.teardown(() => early.close())
    await early.offer(folders)
    while ((await keysOf(spec.commandId)).length < 1) await new Promise((resolve) => setTimeout(resolve, 20))
    // Rewritten and settled again (a playlist after the next segment), then offered again.
    const old = new Date(Date.now() - 30_000)
    await writeFile(join(work, 'outputs', 'out_hls', 'playlist.m3u8'), 'v2')
    await utimes(join(work, 'outputs', 'out_hls', 'playlist.m3u8'), old, old)
    await early.offer(folders)
    const { todo } = await early.settle([file('playlist.m3u8')])
    t.same(sent, ['v1'], 'sent once while ffmpeg ran')
    t.same(todo.map((f) => f.filename), ['playlist.m3u8'], 'its change is left to the final upload')
    await uploadOutputs(target, spec.commandId, work, [file('playlist.m3u8')], early)
    t.equal(await bodyOf(`outputs/${spec.commandId}/playlist.m3u8`), 'v2', 'the bucket holds the last version')
  })

  t.test('files still being written are left for the final upload', async (t) => {
    const spec = specOf({})
    const target = uploadTargetFor(spec, readRunnerConfig(env), env)
    const work = await workWith({ 'seg_000.ts': 'zero' })
    await writeFile(join(work, 'outputs', 'out_hls', 'seg_001.ts'), 'being written')
    // Touched "just now" whatever the machine's pace: a stall between this write and the offer must not make it look settled.
    const justNow = new Date(Date.now() + 60_000)
    await utimes(join(work, 'outputs', 'out_hls', 'seg_001.ts'), justNow, justNow)
    const early = new PreUploads(() => openStore(target, spec.commandId), work, 100)
    await early.offer(folders)
    t.teardown(() => early.close())
    const { todo } = await early.settle([file('seg_000.ts'), file('seg_001.ts')])
    t.same(todo.map((f) => f.filename), ['seg_001.ts'])
  })

  t.test('a failed command deletes everything stored early', async (t) => {
    const spec = specOf({})
    const target = uploadTargetFor(spec, readRunnerConfig(env), env)
    const work = await workWith({ 'a.ts': 'a', 'b.ts': 'b' })
    const early = new PreUploads(() => openStore(target, spec.commandId), work, 100)
    await early.offer(folders)
    await early.settle([])
    t.equal((await keysOf(spec.commandId)).length, 2)
    await early.discard()
    await early.close()
    t.same(await keysOf(spec.commandId), [])
  })

  t.test('early uploads stop at the command’s file cap', async (t) => {
    const spec = specOf({})
    const target = uploadTargetFor(spec, readRunnerConfig(env), env)
    const work = await workWith(Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`f${i}.ts`, 'x'])))
    const early = new PreUploads(() => openStore(target, spec.commandId), work, 3)
    for (let round = 0; round < 5; round++) await early.offer(folders)
    await early.settle([])
    t.equal((await keysOf(spec.commandId)).length, 3)
    await early.discard()
    await early.close()
  })

  t.test('early uploads stop before their bytes would pass the storage room the command was handed', async (t) => {
    const spec = specOf({})
    const target = uploadTargetFor(spec, readRunnerConfig(env), env)
    // Ten files of 100 bytes and room for 350: three go early, the fourth would pass it.
    const work = await workWith(Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`f${i}.ts`, 'x'.repeat(100)])))
    const early = new PreUploads(() => openStore(target, spec.commandId), work, 100, 350)
    for (let round = 0; round < 5; round++) await early.offer(folders)
    await early.settle([])
    t.equal((await keysOf(spec.commandId)).length, 3, 'three files, 300 bytes, are in the bucket')
    await early.discard()
    await early.close()
  })
})
