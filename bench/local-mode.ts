/**
 * Local-mode benchmark (`npm run -s bench -- local-mode`).
 * The whole service runs as `npm start` runs it (child process, local
 * executor, projector, dispatcher) against harness FerretDB, NATS and versitygw;
 * inputs come from a loopback HTTP server; a 10 s 1280x720 H.264/AAC clip.
 *   1. overhead, the client's view: this process submits over HTTP and learns
 *      the end through the API, two ways, each in its own row: (a) polling
 *      GET /commands/:id every BENCH_POLL_MS (50 ms, like an outside probe),
 *      (b) the SSE stream GET /commands/:id/events. Overhead = that time
 *      minus a bare ffmpeg of the same arguments on a local copy, run right
 *      after each command in this same process (interleaved). For a stream-
 *      copy remux and a 720p -> 360p transcode. Targets: remux median <= 80 ms,
 *      p99 <= 200 ms. Beside each row: when the projector's CompletionEvent
 *      came (NATS, right after SUCCESS is written), which shows how much of
 *      the client's figure is the poll's quantisation; and the in-service
 *      ffmpeg time (ffmpeg_command_run_seconds) against the bare run's
 *      (target for the transcode: within 5 %). Then where the time went: the
 *      runner's part, the projection and the client's read (runner-stages.ts).
 *      Beside each, the same work done bare (bare-pipeline.ts: curl GET,
 *      ffmpeg, ffprobe beside a curl PUT to the same S3 server) over the same bare
 *      ffmpeg: what moving the bytes costs before ffkube adds anything.
 *   2. throughput: a burst of BENCH_BURST remux commands, submitted ten per
 *      request; commands/s from the first submit to the last CompletionEvent.
 *      Beside it, the ceiling the tools alone allow on this machine (the same
 *      remux and its ffprobe, back to back, one loop per core, nothing else)
 *      for two builds: the old one (BENCH_OLD_FFMPEG / BENCH_OLD_FFPROBE,
 *      default Debian's /usr/bin ones) and the one the service runs
 *      (toolPath). Targets: >= 30/s and >= 50 % of the service's tools' ceiling.
 *      And the ceiling of the same work done bare (bare-pipeline.ts), one
 *      pipeline loop per core: what the bytes moved allow whoever moves them.
 *      Also: CPU ms per command by process during the burst (bench/process-cpu.ts)
 *      and the MongoDB operations the service sent per command.
 *   3. runner wrapper memory: peak RSS (VmHWM) of the node runner processes,
 *      which excludes ffmpeg (its own process). Also the peak of their
 *      private memory (RssAnon, sampled): RSS counts the pages of node's
 *      binary too, which every node process on the host shares.
 * Knobs: BENCH_SAMPLES, BENCH_BURST, BENCH_POLL_MS, BENCH_CLIP_SECONDS,
 * BENCH_CEILING_COMMANDS, LOCAL_RUNNER_CONCURRENCY, BENCH_MONGODB_OPTIONS
 * (driver options appended to the service's MONGODB_URL).
 */
import { execFile } from 'node:child_process'
import { readFile, rm, stat } from 'node:fs/promises'
import { availableParallelism, loadavg } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { connect, JSONCodec, type NatsConnection } from 'nats'
import { toolPath } from '../api/local/tools.js'
import { COMPLETION_SUBJECT_PREFIX, type CompletionEvent } from '../contracts/completion-events.js'
import { barePipeline, type BarePipeline } from './bare-pipeline.js'
import { RunnerStages, spansOf } from './runner-stages.js'
import { makeClip, serveFiles } from '../test/harness/media.js'
import { scratchDir } from '../test/harness/scratch.js'
import { Client, serviceEnvironment, startService, type RunningService } from '../test/e2e/service.js'
import { submitAndPoll, submitAndStream, type ClientView } from './client-view.js'
import { operationCountingOptions, operationsPerCommand, type OperationCounts } from './mongo-operation-count.js'
import { accountAll, cpuPerCommand, stopAccounting, watchCpu } from './process-cpu.js'
import { percentile as nearestRank, printTable } from './table.js'
import { benchRun } from './bench-run.js'

const run = promisify(execFile)
const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 30)
const BURST = Number(process.env.BENCH_BURST ?? 200)
const POLL_MS = Number(process.env.BENCH_POLL_MS ?? 50)
const CLIP_SECONDS = Number(process.env.BENCH_CLIP_SECONDS ?? 10)
const CEILING_COMMANDS = Number(process.env.BENCH_CEILING_COMMANDS ?? 60)
const OLD_TOOLS = { ffmpeg: process.env.BENCH_OLD_FFMPEG ?? '/usr/bin/ffmpeg', ffprobe: process.env.BENCH_OLD_FFPROBE ?? '/usr/bin/ffprobe' }
const NEW_TOOLS = { ffmpeg: toolPath('ffmpeg'), ffprobe: toolPath('ffprobe') }

const { t, run: runBench } = benchRun()
const table: Array<[string, string, string]> = []

function percentile(values: number[], p: number): number {
  return nearestRank([...values].sort((a, b) => a - b), p)
}

function print(row: Record<string, unknown>): void {
  process.stdout.write(`${JSON.stringify(row)}\n`)
}

/** Completion events by command id: when the projector announced each command's end (performance.now()). */
class Completions {
  readonly #waiting = new Map<string, (at: number) => void>()
  readonly #early = new Map<string, number>()

  constructor(nc: NatsConnection) {
    const codec = JSONCodec<CompletionEvent>()
    nc.subscribe(`${COMPLETION_SUBJECT_PREFIX}.>`, {
      callback: (_err, msg) => {
        const at = performance.now()
        const event = codec.decode(msg.data)
        if (event.status !== 'SUCCESS') process.stderr.write(`command ${event.command_id} ended ${event.status}\n`)
        const waiter = this.#waiting.get(event.command_id)
        if (waiter) waiter(at)
        else this.#early.set(event.command_id, at)
      },
    })
  }

  /** When the command's CompletionEvent arrived. */
  async at(id: string): Promise<number> {
    const early = this.#early.get(id)
    if (early !== undefined) {
      this.#early.delete(id)
      return early
    }
    return new Promise<number>((resolve) => this.#waiting.set(id, resolve))
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
 * core, with the given binaries.
 */
async function toolsCeiling(dir: string, clipPath: string, tools: { ffmpeg: string; ffprobe: string }, commands: number): Promise<number> {
  const loops = availableParallelism()
  const started = performance.now()
  await Promise.all(
    Array.from({ length: loops }, async (_, loop) => {
      const out = join(dir, `ceiling-${loop}.mp4`)
      for (let i = loop; i < commands; i += loops) {
        await run(tools.ffmpeg, ['-y', '-nostdin', '-loglevel', 'error', '-i', clipPath, '-c', 'copy', out])
        await run(tools.ffprobe, ['-v', 'error', '-show_format', '-show_streams', '-of', 'json', out])
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

interface Workload {
  name: string
  /** The remux has the latency target; the transcode, the in-service-vs-bare one. */
  remux: boolean
  args: string[]
  outName: string
}

/** One way of learning the end: the client's view of a command, and the workload's samples so far. */
interface Samples {
  overhead: number[]
  bare: number[]
  /** The same work done bare (bare-pipeline.ts: curl GET, ffmpeg, ffprobe beside a curl PUT) minus the bare ffmpeg. */
  pipelineOverhead: number[]
  inService: number[]
  /** Client's view minus the CompletionEvent: what learning the end through the API adds. */
  seenAfterEvent: number[]
  /** Where each command's time went, span by span (runner-stages.ts). */
  spans: Map<string, number[]>
}

const emptySamples = (): Samples => ({ overhead: [], bare: [], pipelineOverhead: [], inService: [], seenAfterEvent: [], spans: new Map() })

/**
 * SAMPLES rounds (after 3 of warm-up): a command learnt by polling, a bare
 * ffmpeg, a command learnt by SSE, a bare ffmpeg; each command's overhead is
 * taken against the bare run right after it.
 */
async function overheadPhase(service: RunningService, api: Client, completions: Completions, stages: RunnerStages, pipeline: BarePipeline, dir: string, clip: string, clipUrl: string, workload: Workload): Promise<void> {
  const body = { input_files: { in_v: clipUrl }, output_files: { out_x: workload.outName }, ffmpeg_command: ['ffmpeg', '-i', '{{in_v}}', ...workload.args, '{{out_x}}'].join(' ') }
  const ways: Array<[string, () => Promise<ClientView>]> = [
    [`poll ${POLL_MS} ms`, () => submitAndPoll(api, body, POLL_MS)],
    ['SSE', () => submitAndStream(service, api, body)],
  ]
  const samples = new Map(ways.map(([name]) => [name, emptySamples()]))
  for (let i = 0; i < SAMPLES + 3; i++) {
    for (const [name, submit] of ways) {
      const view = await submit()
      const eventAt = await completions.at(view.command.command_id)
      const steps = stages.take(view.command.command_id)
      const bareStarted = performance.now()
      await run(toolPath('ffmpeg'), ['-y', '-nostdin', '-i', clip, ...workload.args, join(dir, workload.outName)])
      const bareMs = performance.now() - bareStarted
      const pipelineMs = await pipeline.once(workload.args, workload.outName)
      if (i < 3) continue // warm-up: page cache, JIT, first connections
      const s = samples.get(name)!
      s.bare.push(bareMs)
      s.pipelineOverhead.push(pipelineMs - bareMs)
      s.overhead.push(view.ms - bareMs)
      s.inService.push((view.command.ffmpeg_command_run_seconds ?? 0) * 1000)
      s.seenAfterEvent.push(view.startedAt + view.ms - eventAt)
      for (const [span, ms] of spansOf(view.startedAt, steps, eventAt, view.startedAt + view.ms)) s.spans.set(span, [...(s.spans.get(span) ?? []), ms])
    }
  }
  await rm(join(dir, workload.outName), { force: true })
  for (const [name, s] of samples) {
    const bare = percentile(s.bare, 50)
    const inService = percentile(s.inService, 50)
    const row = {
      phase: `${workload.name}, ${name}`,
      samples: s.overhead.length,
      bare_ffmpeg_median_ms: Math.round(bare),
      overhead_median_ms: Math.round(percentile(s.overhead, 50)),
      overhead_p99_ms: Math.round(percentile(s.overhead, 99)),
      bare_pipeline_overhead_median_ms: Math.round(percentile(s.pipelineOverhead, 50)),
      bare_pipeline_overhead_p99_ms: Math.round(percentile(s.pipelineOverhead, 99)),
      seen_after_completion_event_median_ms: Math.round(percentile(s.seenAfterEvent, 50)),
      in_service_ffmpeg_median_ms: Math.round(inService),
      in_service_over_bare_pct: Math.round((inService / bare - 1) * 1000) / 10,
    }
    print(row)
    // Spans seen in every sample only: a step some commands skip would mix unlike commands.
    const spans = [...s.spans].filter(([, values]) => values.length === s.overhead.length)
    print({ phase: `${workload.name}, ${name}: where the time goes (median ms)`, ...Object.fromEntries(spans.map(([span, values]) => [span, Math.round(percentile(values, 50))])) })
    const target = workload.remux ? '<= 80 / 200 ms' : ''
    table.push([`${workload.name}, ${name}: overhead median / p99`, `${row.overhead_median_ms} / ${row.overhead_p99_ms}`, target])
    table.push([`${workload.name}, the same work bare: overhead median / p99`, `${row.bare_pipeline_overhead_median_ms} / ${row.bare_pipeline_overhead_p99_ms}`, ''])
    table.push([`${workload.name}, ${name}: in-service ffmpeg vs bare`, `${row.in_service_over_bare_pct > 0 ? '+' : ''}${row.in_service_over_bare_pct} %`, workload.remux ? '' : '<= +5 %'])
  }
}

async function main(): Promise<void> {
  // Before anything starts, so the tools' CPU can be told apart (process-cpu.ts).
  const accounted = accountAll()
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
    makeClip(join(dir, 'clip720.mp4'), { seconds: CLIP_SECONDS, width: 1280, height: 720, fps: 25 }),
  ])
  print({ phase: 'machine', cores: availableParallelism(), load_average: loadavg().map((n) => Math.round(n * 100) / 100), clip_seconds: CLIP_SECONDS, old_tools: OLD_TOOLS.ffmpeg, new_tools: NEW_TOOLS.ffmpeg })
  const media = await serveFiles(t, [clip])
  const api = new Client(service)
  const nc = await connect({ servers: environment.env.NATS_URL as string })
  t.teardown(() => nc.close())
  const completions = new Completions(nc)
  const stages = new RunnerStages(nc)
  const memory = watchRunnerMemory(service.child.pid as number)
  const pipeline = barePipeline(dir, media.url(clip), environment.s3, NEW_TOOLS)
  t.teardown(() => pipeline.close())

  // 1: the client's view of one command at a time.
  await overheadPhase(service, api, completions, stages, pipeline, dir, clip, media.url(clip), { name: 'remux', remux: true, args: ['-c', 'copy'], outName: 'remux.mp4' })
  await overheadPhase(service, api, completions, stages, pipeline, dir, clip, media.url(clip), {
    name: 'transcode 360p',
    remux: false,
    args: ['-vf', 'scale=-2:360', '-c:v', 'libx264', '-preset', 'veryfast', '-c:a', 'copy'],
    outName: 'small.mp4',
  })

  // 2: sustained remux throughput, and where its CPU goes.
  const operationsBefore = await operationCounts(service, operationsFile)
  const cpuWatch = watchCpu(process.pid)
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
  await Promise.all(ids.map((id) => completions.at(id)))
  const seconds = (performance.now() - started) / 1000
  const cpuUsed = await cpuWatch.stop()
  // Settled: the completion event is published after the last write of the command.
  const operations = operationsPerCommand(operationsBefore, await operationCounts(service, operationsFile), ids.length)
  const ceilingOld = await toolsCeiling(dir, clip, OLD_TOOLS, CEILING_COMMANDS)
  const ceilingNew = await toolsCeiling(dir, clip, NEW_TOOLS, CEILING_COMMANDS)
  const ceilingPipeline = await pipeline.ceiling(CEILING_COMMANDS)
  const perSecond = ids.length / seconds
  print({
    phase: 'remux throughput',
    commands: ids.length,
    seconds: Math.round(seconds * 10) / 10,
    commands_per_second: Math.round(perSecond * 10) / 10,
    tools_alone_per_second_new: Math.round(ceilingNew * 10) / 10,
    tools_alone_per_second_old: Math.round(ceilingOld * 10) / 10,
    share_of_new_ceiling_pct: Math.round((perSecond / ceilingNew) * 100),
    bare_pipeline_per_second: Math.round(ceilingPipeline * 10) / 10,
    share_of_bare_pipeline_pct: Math.round((perSecond / ceilingPipeline) * 100),
  })
  table.push(['sustained remux, commands/s', (Math.round(perSecond * 10) / 10).toString(), '>= 30/s'])
  table.push([`tools alone, new (${NEW_TOOLS.ffmpeg})`, `${Math.round(ceilingNew * 10) / 10}/s`, ''])
  table.push([`tools alone, old (${OLD_TOOLS.ffmpeg})`, `${Math.round(ceilingOld * 10) / 10}/s`, ''])
  table.push(['sustained remux / tools alone (new)', `${Math.round((perSecond / ceilingNew) * 100)} %`, '>= 50 %'])
  table.push(['the same work bare (curl GET, tools, curl PUT)', `${Math.round(ceilingPipeline * 10) / 10}/s`, ''])
  table.push(['sustained remux / the same work bare', `${Math.round((perSecond / ceilingPipeline) * 100)} %`, ''])
  const cpu = cpuPerCommand(cpuUsed, ids.length)
  print({ phase: 'CPU ms per remux command during the burst', tools_counted: accounted, total: Math.round(cpu.reduce((sum, [, ms]) => sum + ms, 0)), ...Object.fromEntries(cpu) })
  const total = Math.round(operations.reduce((sum, [, n]) => sum + n, 0) * 10) / 10
  print({ phase: 'mongodb operations per remux command', total, ...Object.fromEntries(operations) })

  const peaks = memory.stop()
  const rss = peaks.map((peak) => peak.rss)
  const own = peaks.map((peak) => peak.private)
  const memoryRow = {
    phase: 'runner wrapper memory (node only)',
    runners_sampled: peaks.length,
    peak_rss_median_mib: Math.round(percentile(rss, 50)),
    peak_rss_max_mib: Math.round(Math.max(...rss)),
    peak_private_max_mib: Math.round(Math.max(...own)),
  }
  print(memoryRow)
  table.push(['runner peak RSS max / private max', `${memoryRow.peak_rss_max_mib} / ${memoryRow.peak_private_max_mib} MiB`, 'no worse (73–77 / 36–39 MiB in the runs of 2026-11-26)'])
  print({ phase: 'machine, at the end', load_average: loadavg().map((n) => Math.round(n * 100) / 100) })
  printTable(table)
}

void runBench(main, stopAccounting)
