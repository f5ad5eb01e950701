import { GetObjectCommand, ListObjectsV2Command } from '@aws-sdk/client-s3'
import { mkdir, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import type { CommandSpec } from '../../contracts/command-spec.js'
import { makeClip, serveFiles } from '../harness/media.js'
import { startS3 } from '../harness/s3.js'
import { scratchDir } from '../harness/scratch.js'
import { runPhaseAsContainer, specOf, storageEnv, type PhaseRun } from './harness.js'

/** One phase as a Job container runs it, every stage as its own event, so the test sees each phase's stages (progress-throttle.ts merges them by default). */
function phase(name: string, spec: CommandSpec, workDir: string, env: NodeJS.ProcessEnv): Promise<PhaseRun> {
  return runPhaseAsContainer(name, spec, workDir, { FFKUBE_PROGRESS_INTERVAL_MS: '0', ...env })
}

t.test('the runner split into phases, each its own run sharing only the work dir', async (t) => {
  const dir = await scratchDir(t, 'ffkube-phases-')
  const s3 = await startS3(t)
  const clip = await makeClip(join(dir, 'clip.mp4'), { seconds: 1 })
  const server = await serveFiles(t, [clip])
  const credentials = join(dir, 'credentials.json')
  await writeFile(credentials, JSON.stringify({ accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey }))
  const client = s3.client()
  t.teardown(() => client.destroy())
  const thumbnail = (): CommandSpec => specOf({
    inputFiles: { in_video: server.url(clip) },
    outputFiles: { out_thumb: 'thumb.jpg' },
    ffmpegCommands: ['ffmpeg -i {{in_video}} -frames:v 1 {{out_thumb}}'],
  })
  const workOf = async (spec: CommandSpec) => {
    const work = join(dir, `work-${spec.commandId}`)
    await mkdir(work, { recursive: true })
    return work
  }
  const objectsOf = async (spec: CommandSpec) =>
    (await client.send(new ListObjectsV2Command({ Bucket: s3.bucket, Prefix: `outputs/${spec.commandId}/` }))).KeyCount ?? 0

  t.test('fetch and run need no credentials, and only upload reports SUCCESS, with the probe the run phase made', async (t) => {
    const spec = thumbnail()
    const work = await workOf(spec)
    const fetch = await phase('fetch', spec, work, storageEnv(s3))
    t.equal(fetch.exitCode, 0)
    t.same(fetch.events.map((e) => e.type === 'PROCESSING' && e.stage), ['FETCHING'], 'fetch reports its stage and nothing terminal')
    t.ok((await readFile(join(work, 'inputs', 'in_video.mp4'))).length > 0, 'the input is in the work dir')

    const run = await phase('run', spec, work, storageEnv(s3))
    t.equal(run.exitCode, 0)
    t.same(run.events.filter((e) => e.type === 'PROCESSING' && e.progress === null).map((e) => e.type === 'PROCESSING' && e.stage), ['RUNNING', 'PROBING'])
    t.notOk(run.events.some((e) => e.type !== 'PROCESSING'), 'run reports nothing terminal')
    t.equal(await objectsOf(spec), 0, 'nothing is uploaded before the upload phase')
    const state = JSON.parse(await readFile(join(work, '.ffkube', 'phases.json'), 'utf8'))
    t.match(state, { commandId: spec.commandId, fetched: { downloads: null }, ran: { runSeconds: Number, metas: { out_thumb: { width: 320, height: 240 } } } })

    const upload = await phase('upload', spec, work, { ...storageEnv(s3), S3_CREDENTIALS_FILE: credentials })
    t.equal(upload.exitCode, 0)
    t.match(upload.events.map((e) => e.type), ['PROCESSING', 'SUCCESS'])
    t.match(upload.events.at(-1), {
      type: 'SUCCESS', command_id: spec.commandId, ffmpeg_command_run_seconds: Number,
      output_files: { out_thumb: { filename: 'thumb.jpg', width: 320, height: 240, object_key: `outputs/${spec.commandId}/thumb.jpg` } },
    })
    t.notOk(upload.events.at(-1) && 'runner_phase_seconds' in upload.events.at(-1)!, 'a Job container times only its own phase, so it claims no split of the others')
    const object = await client.send(new GetObjectCommand({ Bucket: s3.bucket, Key: `outputs/${spec.commandId}/thumb.jpg` }))
    t.equal(object.ContentType, 'image/jpeg')
  })

  t.test('a run phase whose ffmpeg fails reports FAILED itself and exits 1', async (t) => {
    const spec = { ...thumbnail(), ffmpegCommands: ['ffmpeg -i {{in_video}} -c:v nosuchencoder {{out_thumb}}'] }
    const work = await workOf(spec)
    t.equal((await phase('fetch', spec, work, storageEnv(s3))).exitCode, 0)
    const run = await phase('run', spec, work, storageEnv(s3))
    t.equal(run.exitCode, 1)
    t.match(run.events.at(-1), { type: 'FAILED', error_status: 'FFMPEG_FAILED', error_message: /nosuchencoder/ })
  })

  t.test('a fetch phase that cannot fetch reports FAILED and records only that it failed', async (t) => {
    const spec = { ...thumbnail(), inputFiles: { in_video: server.url(join(dir, 'missing.mp4')) } }
    const work = await workOf(spec)
    const fetch = await phase('fetch', spec, work, storageEnv(s3))
    t.equal(fetch.exitCode, 1)
    t.match(fetch.events.at(-1), { type: 'FAILED', error_status: 'INPUT_HTTP_STATUS' })
    t.match(JSON.parse(await readFile(join(work, '.ffkube', 'phases.json'), 'utf8')), { fetched: null, ran: null, failed: true })
    const run = await phase('run', spec, work, storageEnv(s3))
    t.equal(run.exitCode, 1, 'a run phase started anyway fails instead of guessing')
    t.match(run.events.at(-1), { type: 'FAILED', error_status: 'INTERNAL_ERROR', error_message: /before the fetch phase finished/ })
  })

  t.test('as the Job runs them, fetch-run and upload start together: upload waits for the run, then stores and reports SUCCESS', async (t) => {
    const spec = thumbnail()
    const work = await workOf(spec)
    const [run, upload] = await Promise.all([
      phase('fetch-run', spec, work, storageEnv(s3)),
      phase('upload', spec, work, { ...storageEnv(s3), S3_CREDENTIALS_FILE: credentials }),
    ])
    t.equal(run.exitCode, 0)
    t.same(run.events.filter((e) => e.type === 'PROCESSING' && e.progress === null).map((e) => e.type === 'PROCESSING' && e.stage), ['FETCHING', 'RUNNING', 'PROBING'], 'one process fetches and runs')
    t.notOk(run.events.some((e) => e.type !== 'PROCESSING'), 'fetch-run reports nothing terminal')
    t.equal(upload.exitCode, 0)
    t.match(upload.events.at(-1), { type: 'SUCCESS', output_files: { out_thumb: { filename: 'thumb.jpg', width: 320, height: 240 } } })
    t.equal(await objectsOf(spec), 1)
    t.notOk((await readdir(join(work, '.ffkube'))).includes('run.sock'), 'the run process removed its socket when it ended')
  })

  t.test('as the Job runs them, a fetch-run that fails reports FAILED and the upload beside it exits 0 without a word', async (t) => {
    const spec = { ...thumbnail(), ffmpegCommands: ['ffmpeg -i {{in_video}} -c:v nosuchencoder {{out_thumb}}'] }
    const work = await workOf(spec)
    const [run, upload] = await Promise.all([
      phase('fetch-run', spec, work, storageEnv(s3)),
      phase('upload', spec, work, { ...storageEnv(s3), S3_CREDENTIALS_FILE: credentials }),
    ])
    t.equal(run.exitCode, 1)
    t.match(run.events.at(-1), { type: 'FAILED', error_status: 'FFMPEG_FAILED' })
    t.same([upload.exitCode, upload.events], [0, []], 'one terminal event per command: the run\'s')
    t.equal(await objectsOf(spec), 0)
  })

  t.test('the upload phase reads only regular files at the expected paths: a link in an output\'s place is OUTPUT_MISSING', async (t) => {
    const spec = thumbnail()
    const work = await workOf(spec)
    t.equal((await phase('fetch', spec, work, storageEnv(s3))).exitCode, 0)
    t.equal((await phase('run', spec, work, storageEnv(s3))).exitCode, 0)
    await rm(join(work, 'outputs', 'thumb.jpg'))
    await symlink(credentials, join(work, 'outputs', 'thumb.jpg'))
    const upload = await phase('upload', spec, work, { ...storageEnv(s3), S3_CREDENTIALS_FILE: credentials })
    t.equal(upload.exitCode, 1)
    t.match(upload.events.at(-1), { type: 'FAILED', error_status: 'OUTPUT_MISSING' })
    t.equal(await objectsOf(spec), 0, 'the credentials file was not uploaded')
  })

  t.test('an unknown phase is refused before anything runs', async (t) => {
    const spec = thumbnail()
    const run = await phase('transcode', spec, await workOf(spec), storageEnv(s3))
    t.equal(run.exitCode, 2)
    t.same(run.events, [])
  })
})
