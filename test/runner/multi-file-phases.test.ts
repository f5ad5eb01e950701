/**
 * Outputs of many files with the runner split into phases, as a Job's
 * containers run them (each its own main() sharing only the work dir): the
 * upload phase walks each output folder again and trusts nothing the run
 * phase left, and a failed upload keeps nothing partial.
 */
import { GetObjectCommand, ListObjectsV2Command, PutObjectCommand } from '@aws-sdk/client-s3'
import { mkdir, readdir, readFile, symlink, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import type { CommandSpec } from '../../contracts/command-spec.js'
import { makeClip, serveFiles } from '../harness/media.js'
import { startS3 } from '../harness/s3.js'
import { scratchDir } from '../harness/scratch.js'
import { readZip } from '../harness/unzip.js'
import { runPhaseAsContainer as phase, specOf, storageEnv } from './harness.js'

t.test('multi-file outputs with each phase its own run', async (t) => {
  const dir = await scratchDir(t, 'ffkube-multi-phases-')
  // versitygw, whose posix backend would store a key over S3's 1,024 bytes: the runner refuses it first (ADR 0007, finding 4).
  const s3 = await startS3(t)
  const clip = await makeClip(join(dir, 'clip.mp4'), { seconds: 3 })
  const server = await serveFiles(t, [clip])
  const credentials = join(dir, 'credentials.json')
  await writeFile(credentials, JSON.stringify({ accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey }))
  const client = s3.client()
  t.teardown(() => client.destroy())
  const keysOf = async (spec: CommandSpec) =>
    ((await client.send(new ListObjectsV2Command({ Bucket: s3.bucket, Prefix: `outputs/${spec.commandId}/` }))).Contents ?? []).map((o) => o.Key as string).sort()
  const uploadEnv = { ...storageEnv(s3), S3_CREDENTIALS_FILE: credentials }
  const limits = (maxOutputFiles: number) => ({ maxRunSeconds: 300, vcpuMillis: 1000, memoryMib: 1024, maxOutputFiles })
  const hls = (maxOutputFiles = 100): CommandSpec => specOf({
    inputFiles: { in_video: server.url(clip) },
    outputFiles: { out_hls: 'playlist.m3u8' },
    ffmpegCommands: ['ffmpeg -i {{in_video}} -c:v libx264 -g 25 -c:a aac -f hls -hls_time 1 -hls_segment_filename seg_%03d.ts {{out_hls}}'],
    limits: limits(maxOutputFiles),
  })
  /** Fetch and run as their own processes; returns the work dir. */
  const fetchAndRun = async (spec: CommandSpec) => {
    const work = join(dir, `work-${spec.commandId}`)
    await mkdir(work, { recursive: true })
    t.equal((await phase('fetch', spec, work, storageEnv(s3))).exitCode, 0, 'fetch')
    const run = await phase('run', spec, work, storageEnv(s3))
    return { work, run }
  }

  t.test('hls through fetch, run and upload stores the playlist and every segment', async (t) => {
    const spec = hls()
    const { work, run } = await fetchAndRun(spec)
    t.equal(run.exitCode, 0, JSON.stringify(run.events.at(-1)))
    const upload = await phase('upload', spec, work, uploadEnv)
    t.equal(upload.exitCode, 0)
    const success = upload.events.at(-1)
    t.match(success, { type: 'SUCCESS', output_files: { out_hls: { filename: 'playlist.m3u8', file_format: 'hls', object_key: `outputs/${spec.commandId}/playlist.m3u8` } } })
    const files = success?.type === 'SUCCESS' ? (success.output_files.out_hls?.files ?? []) : []
    t.same(files.map((file) => file.filename), ['playlist.m3u8', 'seg_000.ts', 'seg_001.ts', 'seg_002.ts'])
    t.same(await keysOf(spec), files.map((file) => `outputs/${spec.commandId}/${file.filename}`))
  })

  t.test('with compressOutputs the upload phase stores the HLS alias as one zip of its files, and keeps no zip in the work dir', async (t) => {
    const spec = { ...hls(), compressOutputs: ['out_hls'] }
    const { work, run } = await fetchAndRun(spec)
    t.equal(run.exitCode, 0, JSON.stringify(run.events.at(-1)))
    const upload = await phase('upload', spec, work, uploadEnv)
    t.equal(upload.exitCode, 0, JSON.stringify(upload.events.at(-1)))
    const success = upload.events.at(-1)
    t.match(success, { type: 'SUCCESS', output_files: { out_hls: { filename: 'out_hls.zip', mime_type: 'application/zip', file_type: 'other', duration: null, object_key: `outputs/${spec.commandId}/out_hls.zip` } } })
    t.notOk(success?.type === 'SUCCESS' && success.output_files.out_hls?.files, 'a zip is a single file')
    t.same(await keysOf(spec), [`outputs/${spec.commandId}/out_hls.zip`])
    const stored = await client.send(new GetObjectCommand({ Bucket: s3.bucket, Key: `outputs/${spec.commandId}/out_hls.zip` }))
    t.equal(stored.ContentType, 'application/zip')
    const entries = await readZip(Buffer.from(await (stored.Body as { transformToByteArray: () => Promise<Uint8Array> }).transformToByteArray()))
    t.same(entries.map((entry) => entry.name), ['playlist.m3u8', 'seg_000.ts', 'seg_001.ts', 'seg_002.ts'])
    t.same(entries[1]?.data, await readFile(join(work, 'outputs', 'out_hls', 'seg_000.ts')), 'a segment is stored byte for byte')
    t.same(await readdir(join(work, '.ffkube')), ['phases.json'], 'the zip was removed after its upload')
  })

  t.test('with compressOutputs a link planted after the run phase fails the upload phase before any zip is stored', async (t) => {
    const spec = { ...hls(), compressOutputs: true as const }
    const { work, run } = await fetchAndRun(spec)
    t.equal(run.exitCode, 0)
    await symlink(credentials, join(work, 'outputs', 'out_hls', 'seg_999.ts'))
    const upload = await phase('upload', spec, work, uploadEnv)
    t.match(upload.events.at(-1), { type: 'FAILED', error_status: 'OUTPUT_NOT_REGULAR_FILE', error_message: /seg_999.ts is not a regular file/ })
    t.same(await keysOf(spec), [])
  })

  t.test('the run phase stops ffmpeg past the file-count cap and reports FAILED itself', async (t) => {
    const spec = specOf({
      inputFiles: { in_video: server.url(clip) },
      outputFiles: { out_flood: 'f_%06d.bmp' },
      ffmpegCommands: ['ffmpeg -stream_loop -1 -i {{in_video}} -vf fps=20000,scale=8:8 -frames:v 100000 {{out_flood}}'],
      limits: limits(50),
    })
    const { run } = await fetchAndRun(spec)
    t.equal(run.exitCode, 1)
    t.match(run.events.at(-1), { type: 'FAILED', error_status: 'OUTPUT_TOO_MANY_FILES', error_message: /more than 50 files/ })
    t.same(await keysOf(spec), [])
  })

  t.test('a link planted in an output folder after the run phase fails the upload phase with nothing stored', async (t) => {
    const spec = hls()
    const { work, run } = await fetchAndRun(spec)
    t.equal(run.exitCode, 0)
    await symlink(credentials, join(work, 'outputs', 'out_hls', 'seg_999.ts'))
    const upload = await phase('upload', spec, work, uploadEnv)
    t.equal(upload.exitCode, 1)
    t.match(upload.events.at(-1), { type: 'FAILED', error_status: 'OUTPUT_NOT_REGULAR_FILE', error_message: /seg_999.ts is not a regular file/ })
    t.same(await keysOf(spec), [], 'not even the regular files were stored')
  })

  t.test('files added after the run phase count against the cap again in the upload phase', async (t) => {
    const spec = hls(6)
    const { work, run } = await fetchAndRun(spec)
    t.equal(run.exitCode, 0, 'four files fit a cap of six')
    for (const n of [5, 6, 7]) await writeFile(join(work, 'outputs', 'out_hls', `extra_${n}.ts`), 'x')
    const upload = await phase('upload', spec, work, uploadEnv)
    t.match(upload.events.at(-1), { type: 'FAILED', error_status: 'OUTPUT_TOO_MANY_FILES' })
    t.same(await keysOf(spec), [])
  })

  t.test('a file whose key would be over S3’s 1,024 bytes fails the command before anything is stored', async (t) => {
    const spec = hls()
    const { work, run } = await fetchAndRun(spec)
    t.equal(run.exitCode, 0)
    // Five nested folders of 221 bytes: each name fits the file system, the key (over 1,100 bytes) does not fit S3.
    let deep = join(work, 'outputs', 'out_hls')
    for (let level = 0; level < 5; level++) {
      deep = join(deep, `z${'z'.repeat(220)}`)
      await mkdir(deep)
    }
    await writeFile(join(deep, 'last.ts'), 'x')
    const upload = await phase('upload', spec, work, uploadEnv)
    t.equal(upload.exitCode, 1)
    t.match(upload.events.at(-1), { type: 'FAILED', error_status: 'OUTPUT_KEY_TOO_LONG', error_message: /^out_hls: (z{221}\/){5}last\.ts cannot be stored: its object key would be \d+ bytes long and S3 allows at most 1024/ })
    t.same(await keysOf(spec), [], 'not even the files whose keys fit were stored')
  })

  t.test('an upload that fails midway deletes what it stored, so nothing partial is kept', async (t) => {
    const spec = hls()
    const { work, run } = await fetchAndRun(spec)
    t.equal(run.exitCode, 0)
    // versitygw keeps an object as a file, so an object below seg_001.ts makes it a folder: that one PUT fails, the others land.
    const obstacle = `outputs/${spec.commandId}/seg_001.ts/obstacle`
    await client.send(new PutObjectCommand({ Bucket: s3.bucket, Key: obstacle, Body: 'x' }))
    const upload = await phase('upload', spec, work, uploadEnv)
    t.equal(upload.exitCode, 1)
    t.match(upload.events.at(-1), { type: 'FAILED', error_status: 'UPLOAD_FAILED', error_message: /^upload of seg_001\.ts failed/ })
    t.same(await keysOf(spec), [obstacle], 'the files stored before the failure were deleted')
  })
})
