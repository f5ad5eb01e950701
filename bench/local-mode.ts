/**
 * Local-mode benchmark (run after `npx tsc`: `node dist/bench/local-mode.js`).
 * The whole service runs as `npm start` runs it (child process, local
 * executor, projector, dispatcher) against harness FerretDB, NATS and MinIO;
 * inputs come from a loopback HTTP server.
 *   1. overhead: submit → SUCCESS (the CompletionEvent the projector publishes
 *      right after writing SUCCESS, as a webhook client would learn it; polling
 *      GET every few ms would itself load FerretDB, which scans per query), minus
 *      the bare ffmpeg time of the same arguments on a local copy, measured
 *      alternately in the same run; for a stream-copy remux and a 720p → 360p
 *      transcode. Targets: median < 150 ms, p99 < 300 ms. Also printed, for
 *      comparison: a bare ffprobe of the output, started when needed (the
 *      runner starts its own before ffmpeg, held by the start gate, so only
 *      its last ~25 ms are overhead).
 *   2. throughput: a burst of remux commands, submitted ten per request;
 *      commands/s from the first submit to the last SUCCESS. Target ≥ 20/s.
 *      Beside it, the ceiling the tools alone allow on this machine: the same
 *      remux and its ffprobe, back to back, in one loop per core, nothing else.
 *      Also printed: the MongoDB operations the service sent per command
 *      during the burst, by command and collection.
 *   3. runner wrapper memory: peak RSS (VmHWM) of the node runner processes,
 *      which excludes ffmpeg (its own process). Target < 60 MiB. Also the
 *      peak of their private memory (RssAnon, sampled): RSS counts the pages
 *      of node's binary too, which every node process on the host shares.
 * Knobs for comparisons: BENCH_SAMPLES, BENCH_BURST, LOCAL_RUNNER_CONCURRENCY,
 * BENCH_MONGODB_OPTIONS (driver options appended to the service's MONGODB_URL).
 */
import { execFile } from 'node:child_process'
import { readFile, rm, stat } from 'node:fs/promises'
import { availableParallelism } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { connect, JSONCodec, type NatsConnection } from 'nats'
import { toolPath } from '../api/local/tools.js'
import { COMPLETION_SUBJECT_PREFIX, type CompletionEvent } from '../contracts/completion-events.js'
import { makeClip, serveFiles } from '../test/harness/media.js'
import { scratchDir } from '../test/harness/scratch.js'
import { Client, serviceEnvironment, startService, type RunningService } from '../test/e2e/service.js'
import { operationCountingOptions, operationsPerCommand, type OperationCounts } from './mongo-operation-count.js'

const run = promisify(execFile)
const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 30)
const BURST = Number(process.env.BENCH_BURST ?? 100)

const teardowns: Array<() => unknown> = []
const t = { teardown: (fn: () => unknown) => teardowns.push(fn) }

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!
}

/** Completion events by command id: resolved when the projector announces the command's end. */
class Completions {
  readonly #waiting = new Map<string, (event: CompletionEvent) => void>()
  readonly #early = new Map<string, CompletionEvent>()

  constructor(nc: NatsConnection) {
    const codec = JSONCodec<CompletionEvent>()
    nc.subscribe(`${COMPLETION_SUBJECT_PREFIX}.>`, {
      callback: (_err, msg) => {
        const event = codec.decode(msg.data)
        const waiter = this.#waiting.get(event.command_id)
        if (waiter) waiter(event)
        else this.#early.set(event.command_id, event)
      },
    })
  }

  async wait(id: string): Promise<number> {
    const event = this.#early.get(id) ?? (await new Promise<CompletionEvent>((resolve) => this.#waiting.set(id, resolve)))
    const at = performance.now()
    if (event.status !== 'SUCCESS') throw new Error(`command ${id} ended ${event.status}`)
    return at
  }
}

/** Peak RSS (VmHWM) and sampled peak private memory (RssAnon) of the service's runner children, which are node only: ffmpeg is their child. */
function watchRunnerMemory(servicePid: number): { stop(): Array<{ rss: number; private: number }> } {
  const peaks = new Map<number, { rss: number; private: number }>()
  const timer = setInterval(async () => {
    const children = await readFile(`/proc/${servicePid}/task/${servicePid}/children`, 'utf8').catch(() => '')
    for (const pid of children.split(' ').filter(Boolean)) {
      const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')
      if (!/runner-image\/runner\/(main|pool-worker)\.js/.test(cmdline)) continue
      const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '')
      const hwm = /VmHWM:\s+(\d+) kB/.exec(status)
      const anon = /RssAnon:\s+(\d+) kB/.exec(status)
      if (!hwm || !anon) continue
      const peak = peaks.get(Number(pid)) ?? { rss: 0, private: 0 }
      peaks.set(Number(pid), { rss: Math.max(peak.rss, Number(hwm[1]) / 1024), private: Math.max(peak.private, Number(anon[1]) / 1024) })
    }
  }, 50)
  return { stop: () => (clearInterval(timer), [...peaks.values()]) }
}

/**
 * Remux commands/s the tools alone allow here: ffmpeg's stream copy then
 * ffprobe of its output (as the runner probes), back to back, in one loop per
 * core. Each ffmpeg or ffprobe start links ~200 shared libraries (Debian's
 * build), which is most of their cost on a 4 s clip.
 */
async function toolsCeiling(dir: string, clipPath: string, commands: number): Promise<number> {
  const loops = availableParallelism()
  const started = performance.now()
  await Promise.all(
    Array.from({ length: loops }, async (_, loop) => {
      const out = join(dir, `ceiling-${loop}.mp4`)
      for (let i = loop; i < commands; i += loops) {
        await run(toolPath('ffmpeg'), ['-y', '-nostdin', '-loglevel', 'error', '-i', clipPath, '-c', 'copy', out])
        await run(toolPath('ffprobe'), ['-v', 'error', '-show_format', '-show_streams', '-of', 'json', out])
      }
    }),
  )
  return commands / ((performance.now() - started) / 1000)
}

/** The service's MongoDB operations so far (it writes them on SIGUSR2). */
async function operationCounts(service: RunningService, file: string): Promise<OperationCounts> {
  const before = await stat(file).then((s) => s.mtimeMs, () => 0)
  service.child.kill('SIGUSR2')
  for (let i = 0; i < 100; i++) {
    const written = await stat(file).then((s) => s.mtimeMs, () => 0)
    if (written !== before) return JSON.parse(await readFile(file, 'utf8')) as OperationCounts
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  throw new Error('the service did not write its MongoDB operation counts')
}

async function phase(api: Client, completions: Completions, dir: string, name: string, clipPath: string, clipUrl: string, args: string[], outName: string) {
  const overheads: number[] = []
  const bare: number[] = []
  const probes: number[] = []
  for (let i = 0; i < SAMPLES + 3; i++) {
    const started = performance.now()
    const { command_id } = await api.post('/run-ffmpeg-command', {
      input_files: { in_v: clipUrl },
      output_files: { out_x: outName },
      ffmpeg_command: ['ffmpeg', '-i', '{{in_v}}', ...args, '{{out_x}}'].join(' '),
    })
    const total = (await completions.wait(command_id)) - started
    const bareStarted = performance.now()
    await run(toolPath('ffmpeg'), ['-y', '-nostdin', '-i', clipPath, ...args, join(dir, outName)])
    const bareMs = performance.now() - bareStarted
    // An ordinary probe of the output (runner-image/runner/run/probes.ts's arguments, near enough), to show what the start gate saves.
    const probeStarted = performance.now()
    await run(toolPath('ffprobe'), ['-v', 'error', '-show_format', '-show_streams', '-of', 'json', join(dir, outName)])
    const probeMs = performance.now() - probeStarted
    if (i < 3) continue // warm-up: page cache, JIT, first connections
    bare.push(bareMs)
    probes.push(probeMs)
    overheads.push(total - bareMs)
  }
  await rm(join(dir, outName), { force: true })
  const row = {
    phase: name,
    samples: overheads.length,
    bare_ffmpeg_median_ms: Math.round(percentile(bare, 50)),
    overhead_median_ms: Math.round(percentile(overheads, 50)),
    overhead_p99_ms: Math.round(percentile(overheads, 99)),
    bare_ffprobe_median_ms: Math.round(percentile(probes, 50)),
  }
  process.stdout.write(`${JSON.stringify(row)}\n`)
}

async function main(): Promise<void> {
  const dir = await scratchDir(t, 'ffkube-bench-')
  // LOCAL_RUNNER_CONCURRENCY passes through, to compare runner counts.
  const operationsFile = join(dir, 'mongodb-operations.json')
  const environment = await serviceEnvironment(t, {
    LOG_LEVEL: 'error',
    NODE_OPTIONS: operationCountingOptions(),
    FFKUBE_BENCH_MONGODB_OPERATIONS: operationsFile,
    ...(process.env.LOCAL_RUNNER_CONCURRENCY ? { LOCAL_RUNNER_CONCURRENCY: process.env.LOCAL_RUNNER_CONCURRENCY } : {}),
  })
  // Driver options for the service's MongoDB connection (e.g. maxPoolSize=1), to compare.
  const options = process.env.BENCH_MONGODB_OPTIONS
  if (options) {
    const url = environment.env.MONGODB_URL as string
    environment.env.MONGODB_URL = `${url}${url.includes('?') ? '&' : '?'}${options}`
  }
  const [service, clip] = await Promise.all([
    startService(t, environment),
    makeClip(join(dir, 'clip720.mp4'), { seconds: 4, width: 1280, height: 720, fps: 25 }),
  ])
  const media = await serveFiles(t, [clip])
  const api = new Client(service)
  const nc = await connect({ servers: environment.env.NATS_URL as string })
  t.teardown(() => nc.close())
  const completions = new Completions(nc)
  const memory = watchRunnerMemory(service.child.pid as number)

  await phase(api, completions, dir, 'remux (stream copy)', clip, media.url(clip), ['-c', 'copy'], 'remux.mp4')
  await phase(api, completions, dir, 'transcode 720p -> 360p', clip, media.url(clip), ['-vf', 'scale=-2:360', '-c:v', 'libx264', '-preset', 'veryfast', '-c:a', 'copy'], 'small.mp4')

  // 2: sustained remux throughput.
  const operationsBefore = await operationCounts(service, operationsFile)
  const started = performance.now()
  const ids: string[] = []
  for (let i = 0; i < BURST; i += 10) {
    const commands = Array.from({ length: Math.min(10, BURST - i) }, () => ({
      input_files: { in_v: media.url(clip) },
      output_files: { out_x: 'remux.mp4' },
      ffmpeg_command: 'ffmpeg -i {{in_v}} -c copy {{out_x}}',
    }))
    ids.push(...(await api.post('/run-multiple-ffmpeg-commands', { commands })).command_ids)
  }
  await Promise.all(ids.map((id) => completions.wait(id)))
  const seconds = (performance.now() - started) / 1000
  const ceiling = await toolsCeiling(dir, clip, 40)
  process.stdout.write(
    `${JSON.stringify({
      phase: 'remux throughput',
      commands: ids.length,
      seconds: Math.round(seconds * 10) / 10,
      commands_per_second: Math.round((ids.length / seconds) * 10) / 10,
      tools_alone_per_second: Math.round(ceiling * 10) / 10,
    })}\n`,
  )
  // Settled: the completion event is published after the last write of the command.
  const operations = operationsPerCommand(operationsBefore, await operationCounts(service, operationsFile), ids.length)
  const total = Math.round(operations.reduce((sum, [, n]) => sum + n, 0) * 10) / 10
  process.stdout.write(`${JSON.stringify({ phase: 'mongodb operations per remux command', total, ...Object.fromEntries(operations) })}\n`)

  const peaks = memory.stop()
  const rss = peaks.map((peak) => peak.rss)
  const own = peaks.map((peak) => peak.private)
  process.stdout.write(
    `${JSON.stringify({
      phase: 'runner wrapper memory (node only)',
      runners_sampled: peaks.length,
      peak_rss_median_mib: Math.round(percentile(rss, 50)),
      peak_rss_max_mib: Math.round(Math.max(...rss)),
      peak_private_max_mib: Math.round(Math.max(...own)),
    })}\n`,
  )
}

main()
  .catch((err: unknown) => {
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`)
    process.exitCode = 1
  })
  .finally(async () => {
    for (const fn of teardowns.reverse()) await fn()
  })
