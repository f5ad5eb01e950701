/**
 * The warm runner's priorities (runner-image/runner/foreground-tools.ts): its
 * own work niced, the ffmpeg of every command it runs at the niceness it
 * started with — the first command's and the next ones' alike, although the
 * worker cannot lower its own niceness back. Checked without CAP_SYS_NICE,
 * which users' hosts do not give: a root test process drops it for the worker.
 * The worker is driven through its own interface: job lines on stdin, status
 * events on stdout.
 */
import { spawn } from 'node:child_process'
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises'
import { getPriority } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import t from 'tap'
import { defaultPoolWorkerMain } from '../../api/executors/runner-pool.js'
import { toolPath } from '../../api/local/tools.js'
import { localRunnerNodeFlags } from '../../contracts/runner-node-flags.js'
import type { StatusEvent } from '../../contracts/status-events.js'
import { makeClip, serveFiles } from '../harness/media.js'
import { startS3 } from '../harness/s3.js'
import { scratchDir } from '../harness/scratch.js'
import { specOf } from './harness.js'

const CAP_SYS_NICE = 23n

/** Whether this process may lower a nice value (then the worker is started without that right). */
async function maySetNicenessDown(): Promise<boolean> {
  const status = await readFile('/proc/self/status', 'utf8')
  const effective = BigInt(`0x${/CapEff:\s+([0-9a-f]+)/.exec(status)?.[1] ?? '0'}`)
  return ((effective >> CAP_SYS_NICE) & 1n) === 1n
}

/** The nice value of a process's main thread (field 19 of /proc/PID/stat). */
async function nicenessOf(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8')
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16])
}

t.test('a warm runner runs niced, and the ffmpeg of each command it runs at the niceness it started with', async (t) => {
  const dir = await scratchDir(t)
  const [s3, clip] = await Promise.all([startS3(t), makeClip(join(dir, 'clip.mp4'), { seconds: 1, width: 320, height: 240, fps: 10 })])
  const media = await serveFiles(t, [clip])
  const credentials = join(dir, 'credentials.json')
  await writeFile(credentials, JSON.stringify({ accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey }), { mode: 0o600 })
  // An "ffmpeg" that says at which niceness it was started, then fails: the command's error message carries it.
  const ffmpeg = join(dir, 'ffmpeg-niceness.sh')
  await writeFile(ffmpeg, '#!/bin/sh\necho "started at niceness $(nice)" >&2\nexit 3\n')
  await chmod(ffmpeg, 0o755)
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH, LOG_LEVEL: 'warn', ALLOW_PRIVATE_NETWORKS: '1',
    FFMPEG_PATH: ffmpeg, FFPROBE_PATH: toolPath('ffprobe'), YTDLP_PATH: toolPath('yt-dlp'),
    S3_ENDPOINT: s3.endpoint, S3_BUCKET: s3.bucket, S3_REGION: s3.region, S3_FORCE_PATH_STYLE: 'true', S3_CREDENTIALS_FILE: credentials,
  }
  const node = [process.execPath, ...localRunnerNodeFlags(), defaultPoolWorkerMain()]
  const privileged = await maySetNicenessDown()
  const argv = privileged ? ['setpriv', '--inh-caps=-sys_nice', '--bounding-set=-sys_nice', '--', ...node] : node
  // Its own process group, as the pool starts it (the worker kills its group when its stdin closes).
  const worker = spawn(argv[0] as string, argv.slice(1), { env, cwd: dir, detached: true, stdio: ['pipe', 'pipe', 'inherit'] })
  t.teardown(() => {
    worker.stdin.end()
  })
  const lines = createInterface({ input: worker.stdout })[Symbol.asyncIterator]()
  const started = getPriority(0)

  /** One command on the worker: its terminal status event. */
  const runOne = async (name: string): Promise<StatusEvent> => {
    const workDir = join(dir, name)
    await mkdir(workDir)
    const spec = specOf({ inputFiles: { in_v: media.url(clip) }, outputFiles: { out_v: 'out.mp4' }, ffmpegCommands: ['ffmpeg -i {{in_v}} -c copy {{out_v}}'] })
    worker.stdin.write(`${JSON.stringify({ spec, workDir })}\n`)
    let terminal: StatusEvent | null = null
    for (;;) {
      const next = await lines.next()
      if (next.done) throw new Error('the worker ended before the job did')
      const message = JSON.parse(next.value) as Partial<StatusEvent> & { status?: string }
      if (message.type === 'SUCCESS' || message.type === 'FAILED') terminal = message as StatusEvent
      if (message.status !== undefined) break
    }
    if (!terminal) throw new Error('the job ended without a terminal event')
    return terminal
  }

  const first = await runOne('first')
  t.equal(first.type, 'FAILED')
  t.match(first.type === 'FAILED' ? first.error_message : '', new RegExp(`started at niceness ${started}(\\D|$)`), 'the first command’s ffmpeg starts at the worker’s start value')
  t.equal(await nicenessOf(worker.pid ?? -1), Math.min(started + 10, 19), `the worker itself runs 10 lower${privileged ? ' (started without CAP_SYS_NICE)' : ''}`)
  const second = await runOne('second')
  t.match(second.type === 'FAILED' ? second.error_message : '', new RegExp(`started at niceness ${started}(\\D|$)`), 'so does the next command’s, on the same niced worker')
  t.equal(await nicenessOf(worker.pid ?? -1), Math.min(started + 10, 19), 'and the worker stays niced')
})
