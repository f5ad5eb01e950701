/**
 * The runner as the image ships it (runner-image/bundle.ts, run by the
 * Dockerfile's build stage with the same options): bundled from the compiled
 * dist/ into a folder with no node_modules above it, then a remux run as the
 * Job's two containers run it, two processes with the image's node flags,
 * the spec in FFKUBE_COMMAND_SPEC, status over NATS, the credentials only in
 * the upload process. An upgrade of a dependency that esbuild can no longer
 * bundle, or that needs a file the bundle left behind, fails here.
 */
import { spawn } from 'node:child_process'
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { GetObjectCommand } from '@aws-sdk/client-s3'
import { connect, JSONCodec } from 'nats'
import t from 'tap'
import { toolPath } from '../../api/local/tools.js'
import { RUNNER_NODE_FLAGS } from '../../contracts/runner-node-flags.js'
import { STATUS_STREAM, statusSubject, type StatusEvent, type SuccessEvent } from '../../contracts/status-events.js'
import { bundleRunner } from '../../runner-image/bundle.js'
import { makeClip, probeDuration, serveFiles } from '../harness/media.js'
import { createServiceStreams, startNats } from '../harness/nats.js'
import { startS3 } from '../harness/s3.js'
import { scratchDir } from '../harness/scratch.js'
import { specOf } from './harness.js'

function runProcess(argv: string[], env: NodeJS.ProcessEnv, cwd: string): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, argv, { env, cwd, stdio: ['ignore', 'ignore', 'pipe'] })
  let stderr = ''
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')))
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, stderr })))
}

t.test("the bundled runner runs a remux as the Job's two containers do, from a folder with no node_modules", async (t) => {
  const dir = await scratchDir(t, 'ffkube-runner-bundle-')
  const written = await bundleRunner(join(process.cwd(), 'dist'), join(dir, 'app'))
  const main = join(dir, 'app', 'runner', 'main.js')
  t.ok(Object.keys(written).some((file) => file.endsWith(join('runner', 'main.js'))), 'main.js is written')
  const chunks = await readdir(join(dir, 'app', 'runner', 'chunks'))
  const mainText = await readFile(main, 'utf8')
  const chunkTexts = await Promise.all(chunks.map((chunk) => readFile(join(dir, 'app', 'runner', 'chunks', chunk), 'utf8')))
  t.notOk(mainText.includes('S3Client'), 'the S3 SDK is not in main.js, which the ffmpeg container loads')
  t.ok(chunkTexts.some((text) => text.includes('S3Client = class')), 'it is in a chunk of its own, loaded by the upload only')

  const [nats, s3, clip] = await Promise.all([startNats(t), startS3(t), makeClip(join(dir, 'clip.mp4'), { seconds: 2, width: 320, height: 240 })])
  const media = await serveFiles(t, [clip])
  const credentials = join(dir, 'credentials.json')
  await writeFile(credentials, JSON.stringify({ accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey }))
  const work = join(dir, 'work')
  const uploadScratch = join(dir, 'upload-scratch')
  await mkdir(work)
  await mkdir(uploadScratch)
  const spec = specOf({
    inputFiles: { in_video: media.url(clip) },
    outputFiles: { out_video: 'remux.mkv' },
    ffmpegCommands: ['ffmpeg -i {{in_video}} -map 0 -c copy {{out_video}}'],
  })
  // What operator/job-builder.ts gives both containers; the upload's own HOME, TMPDIR and credentials.
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH, LOG_LEVEL: 'warn', ALLOW_PRIVATE_NETWORKS: '1',
    FFMPEG_PATH: toolPath('ffmpeg'), FFPROBE_PATH: toolPath('ffprobe'),
    FFKUBE_COMMAND_ID: spec.commandId, FFKUBE_COMMAND_SPEC: JSON.stringify(spec), FFKUBE_WORK_DIR: work,
    FFKUBE_STATUS_REPORTER: 'nats', NATS_URL: nats.url, TMPDIR: join(work, '.tmp'), HOME: join(work, '.home'),
    S3_ENDPOINT: s3.endpoint, S3_BUCKET: s3.bucket, S3_REGION: s3.region,
  }
  const uploadEnv = { ...env, TMPDIR: join(uploadScratch, 'tmp'), HOME: join(uploadScratch, 'home'), S3_CREDENTIALS_FILE: credentials }
  await createServiceStreams(t, nats)
  const [ran, uploaded] = await Promise.all([
    runProcess([...RUNNER_NODE_FLAGS, main, '--phase', 'fetch-run', '--work-dir', work], env, dir),
    runProcess([...RUNNER_NODE_FLAGS, main, '--phase', 'upload', '--work-dir', work], uploadEnv, dir),
  ])
  t.equal(ran.code, 0, `the fetch-run process exits 0: ${ran.stderr}`)
  t.equal(uploaded.code, 0, `the upload process exits 0: ${uploaded.stderr}`)

  const nc = await connect({ servers: nats.url })
  t.teardown(() => nc.close())
  const jsm = await nc.jetstreamManager()
  const last = await jsm.streams.getMessage(STATUS_STREAM, { last_by_subj: statusSubject(spec.commandId) })
  const event = JSONCodec<StatusEvent>().decode(last.data)
  t.match(event, { type: 'SUCCESS', command_id: spec.commandId, output_files: { out_video: { filename: 'remux.mkv', file_type: 'video', file_format: 'matroska', width: 320, height: 240 } } }, 'SUCCESS, with the probe of the output')
  const key = (event as SuccessEvent).output_files.out_video?.object_key
  t.ok(key, 'the output has an object key')
  const object = await s3.client().send(new GetObjectCommand({ Bucket: s3.bucket, Key: key! }))
  const stored = join(dir, 'stored.mkv')
  await writeFile(stored, await object.Body!.transformToByteArray())
  t.ok(Math.abs((await probeDuration(stored)) - 2) < 0.2, 'the stored object is the 2 s clip, remuxed')
})
