/**
 * Runner wrapper memory in a pod's layout (run after `npx tsc`:
 * `npm run -s bench -- runner-memory`): the runner's three phases as the
 * operator's Job runs them, each its own process (`--phase fetch|run|upload`,
 * spec in FFKUBE_COMMAND_SPEC, status over NATS), for a 720p stream-copy remux
 * and a 720p → 360p transcode. Prints each phase's peak RSS (VmHWM, sampled
 * every 5 ms; the node process only: ffmpeg and ffprobe are its children),
 * started with the image's node flags (contracts/runner-node-flags.ts).
 * The `run` phase is the one alive beside ffmpeg. Target (issue 4): < 60 MiB.
 */
import { spawn } from 'node:child_process'
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { randomUUID } from 'node:crypto'
import { toolPath } from '../api/local/tools.js'
import type { CommandSpec } from '../contracts/command-spec.js'
import { localRunnerNodeFlags } from '../contracts/runner-node-flags.js'
import { makeClip, serveFiles } from '../test/harness/media.js'
import { createServiceStreams, startNats } from '../test/harness/nats.js'
import { startS3 } from '../test/harness/s3.js'
import { scratchDir } from '../test/harness/scratch.js'
import { benchRun } from './bench-run.js'

const { t, run: runBench } = benchRun()
const RUNS = Number(process.env.BENCH_RUNS ?? 5)

/**
 * Runs one phase as its own process; resolves with its exit code, peak RSS and
 * sampled peak private memory (RssAnon: RSS less node's binary, which every
 * node process on the node shares through the page cache), in MiB.
 */
function runPhase(phase: string, env: NodeJS.ProcessEnv): Promise<{ code: number | null; peakMib: number; privateMib: number }> {
  const child = spawn(process.execPath, [...localRunnerNodeFlags(), 'dist/runner-image/runner/main.js', '--phase', phase], { env, stdio: ['ignore', 'ignore', 'inherit'] })
  let peak = 0
  let own = 0
  const timer = setInterval(() => {
    readFile(`/proc/${child.pid}/status`, 'utf8').then(
      (status) => {
        const hwm = /VmHWM:\s+(\d+) kB/.exec(status)
        const anon = /RssAnon:\s+(\d+) kB/.exec(status)
        if (hwm) peak = Math.max(peak, Number(hwm[1]) / 1024)
        if (anon) own = Math.max(own, Number(anon[1]) / 1024)
      },
      () => undefined,
    )
  }, 5)
  return new Promise((resolve) => child.once('exit', (code) => {
    clearInterval(timer)
    resolve({ code, peakMib: peak, privateMib: own })
  }))
}

async function main(): Promise<void> {
  const dir = await scratchDir(t, 'ffkube-bench-memory-')
  const [nats, s3, clip] = await Promise.all([startNats(t), startS3(t), makeClip(join(dir, 'clip720.mp4'), { seconds: 4, width: 1280, height: 720, fps: 25 })])
  await createServiceStreams(t, nats)
  const media = await serveFiles(t, [clip])
  const credentials = join(dir, 'credentials.json')
  await writeFile(credentials, JSON.stringify({ accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey }))
  const cases: Array<[string, string]> = [
    ['remux (stream copy)', 'ffmpeg -i {{in_video}} -c copy {{out_video}}'],
    ['transcode 720p -> 360p', 'ffmpeg -i {{in_video}} -vf scale=-2:360 -c:v libx264 -preset veryfast -c:a copy {{out_video}}'],
  ]
  for (const [name, command] of cases) {
    const peaks: Record<string, number[]> = { fetch: [], run: [], upload: [] }
    const privatePeaks: Record<string, number[]> = { fetch: [], run: [], upload: [] }
    for (let i = 0; i < RUNS; i++) {
      const spec: CommandSpec = {
        commandId: randomUUID(),
        accountId: 'acc_bench',
        commandType: 'FFMPEG_COMMAND',
        inputFiles: { in_video: media.url(clip) },
        outputFiles: { out_video: 'out.mp4' },
        ffmpegCommands: [command],
        ytdlp: null,
        storageDestinationId: null,
        submittedAt: new Date().toISOString(),
      }
      const work = await scratchDir(t, 'ffkube-bench-work-')
      // What the operator's Job gives each container (operator/job-builder.ts); credentials to upload only.
      const env: NodeJS.ProcessEnv = {
        PATH: process.env.PATH,
        FFMPEG_PATH: toolPath('ffmpeg'),
        FFPROBE_PATH: toolPath('ffprobe'),
        FFKUBE_COMMAND_SPEC: JSON.stringify(spec),
        FFKUBE_WORK_DIR: work,
        FFKUBE_STATUS_REPORTER: 'nats',
        NATS_URL: nats.url,
        TMPDIR: join(work, '.tmp'),
        HOME: join(work, '.home'),
        ALLOW_PRIVATE_NETWORKS: '1',
        S3_ENDPOINT: s3.endpoint,
        S3_BUCKET: s3.bucket,
        LOG_LEVEL: 'warn',
      }
      for (const phase of ['fetch', 'run', 'upload']) {
        const { code, peakMib, privateMib } = await runPhase(phase, phase === 'upload' ? { ...env, S3_CREDENTIALS_FILE: credentials } : env)
        if (code !== 0) throw new Error(`${name}: phase ${phase} exited ${code}`)
        peaks[phase]!.push(peakMib)
        privatePeaks[phase]!.push(privateMib)
      }
    }
    const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!
    const row = Object.fromEntries(
      Object.entries(peaks).flatMap(([phase, values]) => [
        [`${phase}_median_mib`, Math.round(median(values))],
        [`${phase}_max_mib`, Math.round(Math.max(...values))],
        [`${phase}_private_max_mib`, Math.round(Math.max(...privatePeaks[phase]!))],
      ]),
    )
    process.stdout.write(`${JSON.stringify({ case: name, runs: RUNS, ...row })}\n`)
  }
}

void runBench(main)
