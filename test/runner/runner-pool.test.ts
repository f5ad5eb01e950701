import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { defaultPoolWorkerMain, RunnerPool } from '../../api/executors/runner-pool.js'
import { toolPath } from '../../api/local/tools.js'
import type { StatusEvent } from '../../contracts/status-events.js'
import { makeClip, serveFiles } from '../harness/media.js'
import { startS3 } from '../harness/s3.js'
import { scratchDir } from '../harness/scratch.js'
import { specOf } from './harness.js'

t.test('the warm pool relays its workers’ status events', async (t) => {
  const dir = await scratchDir(t)
  const [s3, clip] = await Promise.all([startS3(t), makeClip(join(dir, 'clip.mp4'), { seconds: 1, width: 320, height: 240, fps: 10 })])
  const media = await serveFiles(t, [clip])
  const credentials = join(dir, 'credentials.json')
  await writeFile(credentials, JSON.stringify({ accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey }), { mode: 0o600 })
  // What the local executor gives its workers, minus NATS: a worker must not need it.
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH, LOG_LEVEL: 'warn', ALLOW_PRIVATE_NETWORKS: '1',
    FFMPEG_PATH: toolPath('ffmpeg'), FFPROBE_PATH: toolPath('ffprobe'), YTDLP_PATH: toolPath('yt-dlp'),
    S3_ENDPOINT: s3.endpoint, S3_BUCKET: s3.bucket, S3_REGION: s3.region, S3_FORCE_PATH_STYLE: 'true', S3_CREDENTIALS_FILE: credentials,
  }
  const remux = () => specOf({ inputFiles: { in_v: media.url(clip) }, outputFiles: { out_v: 'out.mp4' }, ffmpegCommands: ['ffmpeg -i {{in_v}} -c copy {{out_v}}'] })
  const workDir = async (name: string) => {
    const work = join(dir, name)
    await mkdir(work)
    return work
  }

  t.test('in order, and a job ends only once its events are published', async (t) => {
    const published: StatusEvent[] = []
    let lastPublishedAt = 0
    // A slow broker: each event takes 100 ms to be acknowledged.
    const pool = new RunnerPool(defaultPoolWorkerMain(), env, dir, async (event) => {
      await new Promise((resolve) => setTimeout(resolve, 100))
      published.push(event)
      lastPublishedAt = performance.now()
    })
    t.teardown(() => pool.close())
    const spec = remux()
    const job = pool.run(spec, await workDir('ordered'))
    const exit = await job.exited
    const endedAt = performance.now()
    t.equal(exit.code, 0, exit.stderrTail)
    t.equal(published.at(-1)?.type, 'SUCCESS', 'the terminal event was published')
    t.ok(endedAt >= lastPublishedAt, 'the job ended after its last event was acknowledged, not when the worker wrote it')
    t.ok(published.every((event) => event.command_id === spec.commandId && event.event_id.startsWith(spec.commandId)))
    t.ok(published.slice(0, -1).every((event) => event.type === 'PROCESSING'), 'progress before the end, never after')
    // How many PROCESSING events a remux sends depends on how long it takes (the throttle's
    // 250 ms interval): on a loaded machine more of them. The merging itself is asserted with an
    // injected clock in test/unit/progress-throttle.test.ts.

    // The same worker takes the next job (warm), with its own events.
    const next = remux()
    t.equal((await pool.run(next, await workDir('second')).exited).code, 0)
    t.equal(published.filter((event) => event.command_id === next.commandId).at(-1)?.type, 'SUCCESS')
  })

  t.test('a terminal event that cannot be published makes the job unreported', async (t) => {
    const pool = new RunnerPool(defaultPoolWorkerMain(), env, dir, async (event) => {
      if (event.type !== 'PROCESSING') throw new Error('broker down')
    })
    t.teardown(() => pool.close())
    const exit = await pool.run(remux(), await workDir('unreported')).exited
    t.equal(exit.code, 2, 'the executor then fails the command itself (RUNNER_FAILED), it is never left running')
  })

  t.test('a lost progress event does not fail the job', async (t) => {
    const pool = new RunnerPool(defaultPoolWorkerMain(), env, dir, async (event) => {
      if (event.type === 'PROCESSING') throw new Error('dropped')
    })
    t.teardown(() => pool.close())
    t.equal((await pool.run(remux(), await workDir('lossy')).exited).code, 0)
  })

  t.test('a worker runs with the runner’s node flags and holds no NATS connection', async (t) => {
    const pool = new RunnerPool(defaultPoolWorkerMain(), env, dir, async () => undefined)
    t.teardown(() => pool.close())
    const job = pool.run(remux(), await workDir('flags'))
    const cmdline = (await readFile(`/proc/${job.pid}/cmdline`, 'utf8')).split('\0')
    t.ok(cmdline.includes('--lite-mode'), cmdline.join(' '))
    t.notOk('NATS_URL' in env, 'no NATS address to connect to')
    t.equal((await job.exited).code, 0)
  })
})
