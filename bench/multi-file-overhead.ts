/**
 * Part (b) of the multi-file bench (bench/multi-file.ts): one command through
 * the service, timed from the client's side (Server-Sent Events, or polling
 * GET to compare), and a bare ffmpeg of the policy's argv right after it, with
 * where the difference goes:
 *   - the time: the runner's phases (runner_phase_seconds on its SUCCESS
 *     event), the part of its run phase outside ffmpeg, what lies outside the
 *     runner's phases (dispatch, the runner's start, the SUCCESS event's way to
 *     NATS), and the SUCCESS event's way to the client;
 *   - the CPU each process used meanwhile (bench/process-cpu.ts): on two cores
 *     an encode that uses both is slowed by whatever else runs, so ffmpeg's own
 *     CPU in the service against bare says what the jail or the argv cost, and
 *     the others' CPU says what slowed it.
 */
import { execFile } from 'node:child_process'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { toolPath } from '../api/local/tools.js'
import { planFfmpegCommands } from '../contracts/ffmpeg-plan.js'
import { inputPathsFor } from '../contracts/ffmpeg-paths.js'
import type { RunnerPhaseSeconds } from '../contracts/status-events.js'
import { scratchDir, type Teardown } from '../test/harness/scratch.js'
import type { Client, RunningService } from '../test/e2e/service.js'
import { submitAndPoll, submitAndStream } from './client-view.js'
import { ASIDE, watchCpu, type CpuByGroup } from './process-cpu.js'
import type { RunnerStages } from './runner-stages.js'

const exec = promisify(execFile)

/** How the client learns the end: SSE (GET /commands/:id/events), or GET every 50 ms. */
export type ClientKind = 'sse' | 'poll'

/** One command through the service and the bare ffmpeg after it, in seconds; CPU in seconds by process group. */
export interface OverheadSample {
  client: ClientKind
  total: number
  ffmpegInService: number
  bare: number
  phases: RunnerPhaseSeconds | null
  /** Submit → the runner's SUCCESS event on NATS. */
  successAt: number | null
  cpu: CpuByGroup
  /** The same groups while the bare ffmpeg ran (the service idle): what they cost without a command. */
  idleCpu: CpuByGroup
  bareCpu: number
}

export interface OverheadJob {
  body: { input_files: Record<string, string>; output_files: Record<string, string>; ffmpeg_command: string }
  /** The input's local copy, for the bare run. */
  clip: string
}

/** CPU seconds this process's reaped children used so far (utime + stime of the waited-for). */
async function childrenCpuSeconds(): Promise<number> {
  const stat = await readFile('/proc/self/stat', 'utf8')
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  // cutime and cstime are fields 16 and 17, in USER_HZ (100).
  return (Number(fields[13]) + Number(fields[14])) / 100
}

/** A bare ffmpeg of the policy's argv on a local copy of the input, in a fresh work dir: wall and CPU seconds. */
export async function bareFfmpeg(t: Teardown, job: OverheadJob, aside: ReadonlySet<number> = new Set()): Promise<{ seconds: number; cpu: number; others: CpuByGroup }> {
  const work = await scratchDir(t, 'ffkube-bench-bare-')
  const [input] = Object.keys(job.body.input_files)
  const plan = planFfmpegCommands([job.body.ffmpeg_command], { mode: 'ffmpeg', inputs: inputPathsFor({ [input as string]: 'http://x/clip.mp4' }), outputs: job.body.output_files })
  if (!plan.ok) throw new Error(plan.violation.message)
  const folders = Object.keys(job.body.output_files).map((alias) => join(work, 'outputs', alias))
  await exec('mkdir', ['-p', join(work, 'inputs'), ...folders])
  await exec('cp', [job.clip, join(work, 'inputs', `${input}.mp4`)])
  const cpuBefore = await childrenCpuSeconds()
  const cpuWatch = watchCpu(process.pid, undefined, aside)
  const started = performance.now()
  await exec(toolPath('ffmpeg'), plan.argvs[0] as string[], { cwd: work, maxBuffer: 64 * 1024 * 1024 })
  const seconds = (performance.now() - started) / 1000
  const others = await cpuWatch.stop()
  return { seconds, cpu: (await childrenCpuSeconds()) - cpuBefore, others }
}

/** What else a sample does besides its own command and bare run. */
export interface SampleOptions {
  /** Processes not to count (another service and its servers, idle): CPU group ASIDE. */
  aside?: ReadonlySet<number>
  /** Called right before the submit and right after the client saw the end, outside the CPU watch (bench/cpu-profile-windows.ts). */
  around?: (moment: 'before' | 'after') => Promise<void>
}

/**
 * One command through the service as `client` sees it, and the same argv
 * bare: after it, or before it with `bareFirst` (alternated by the caller, so
 * a drift of the machine's speed falls on both alike).
 */
export async function measureOverhead(t: Teardown, service: RunningService, api: Client, stages: RunnerStages, job: OverheadJob, client: ClientKind, bareFirst = false, options: SampleOptions = {}): Promise<OverheadSample> {
  const before = bareFirst ? await bareFfmpeg(t, job, options.aside) : null
  await options.around?.('before')
  const cpuWatch = watchCpu(process.pid, undefined, options.aside)
  const view = client === 'sse' ? await submitAndStream(service, api, job.body) : await submitAndPoll(api, job.body, 50)
  const cpu = await cpuWatch.stop()
  await options.around?.('after')
  const success = stages.take(view.command.command_id).find((seen) => seen.step === 'SUCCESS')
  const bare = before ?? (await bareFfmpeg(t, job, options.aside))
  return {
    client,
    total: view.ms / 1000,
    ffmpegInService: view.command.ffmpeg_command_run_seconds as number,
    bare: bare.seconds,
    phases: success?.phases ?? null,
    successAt: success ? (success.at - view.startedAt) / 1000 : null,
    cpu: inSeconds(cpu),
    idleCpu: inSeconds(bare.others),
    bareCpu: bare.cpu,
  }
}

/** CPU seconds of every group but the tools and the processes set aside. */
export function besideTheEncode(cpu: CpuByGroup): number {
  return Object.entries(cpu).reduce((sum, [group, seconds]) => (group === 'tools' || group === ASIDE ? sum : sum + seconds), 0)
}

function inSeconds(cpu: CpuByGroup): CpuByGroup {
  return Object.fromEntries(Object.entries(cpu).map(([group, ms]) => [group, ms / 1000]))
}

/** The median; of an even count, the mean of the middle two. */
export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? (sorted[middle] as number) : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2
}

/** `median [min–max]`, in seconds to two decimals. */
export function spread(values: number[]): string {
  if (values.some((value) => !Number.isFinite(value))) return 'n/a'
  return `${median(values).toFixed(2)} [${Math.min(...values).toFixed(2)}–${Math.max(...values).toFixed(2)}]`
}

/**
 * The split of samples of one kind, as [row, `median [min–max]`] pairs:
 * the overhead, its parts in time, and the CPU used while the command ran.
 */
export function overheadSplit(samples: readonly OverheadSample[]): Array<[string, string]> {
  const of = (pick: (sample: OverheadSample) => number | null | undefined) => spread(samples.map((sample) => pick(sample) ?? NaN))
  const groups = [...new Set(samples.flatMap((sample) => Object.keys(sample.cpu)))].filter((group) => group !== 'tools' && group !== ASIDE).sort()
  return [
    ['submit → SUCCESS seen by the client', of((s) => s.total)],
    ['bare ffmpeg, same argv', of((s) => s.bare)],
    ['overhead (the difference)', of((s) => s.total - s.bare)],
    ['  ffmpeg in the service − bare', of((s) => s.ffmpegInService - s.bare)],
    ['  outside ffmpeg', of((s) => s.total - s.ffmpegInService)],
    ['    runner fetch', of((s) => s.phases?.fetch)],
    ['    runner run phase outside ffmpeg', of((s) => s.phases && s.phases.run - s.ffmpegInService)],
    ['    runner deliver (probe, stores left)', of((s) => s.phases?.deliver)],
    ['    before and after the runner (dispatch, start, SUCCESS to NATS)', of((s) => (s.phases && s.successAt !== null ? s.successAt - (s.phases.fetch + s.phases.run + s.phases.deliver) : null))],
    ['    SUCCESS on NATS → client', of((s) => (s.successAt === null ? null : s.total - s.successAt))],
    ['CPU s: ffmpeg and ffprobe in the service (jail included)', of((s) => s.cpu.tools)],
    ['CPU s: bare ffmpeg', of((s) => s.bareCpu)],
    ['CPU s beside the encode (every process but ffmpeg and ffprobe)', of((s) => besideTheEncode(s.cpu))],
    ...groups.map((group): [string, string] => [`CPU s during the command: ${group}`, of((s) => s.cpu[group] ?? 0)]),
    ...groups.map((group): [string, string] => [`CPU s during the bare ffmpeg (service idle): ${group}`, of((s) => s.idleCpu[group] ?? 0)]),
  ]
}

/** Prints splits side by side: one column per kind of sample. */
export function printSplit(title: string, columns: ReadonlyArray<{ name: string; samples: readonly OverheadSample[] }>): void {
  const splits = columns.map((column) => new Map(overheadSplit(column.samples)))
  const rows = [...new Set(splits.flatMap((split) => [...split.keys()]))]
  const width = Math.max(...rows.map((row) => row.length))
  const cells = columns.map((column, i) => Math.max(column.name.length, ...rows.map((row) => (splits[i]?.get(row) ?? '').length)))
  console.log(`\n${title}\n${'seconds, median [min–max]'.padEnd(width)} | ${columns.map((column, i) => column.name.padStart(cells[i] as number)).join(' | ')}`)
  console.log(`${'-'.repeat(width)}-|-${cells.map((w) => '-'.repeat(w)).join('-|-')}`)
  for (const row of rows) console.log(`${row.padEnd(width)} | ${splits.map((split, i) => (split.get(row) ?? '').padStart(cells[i] as number)).join(' | ')}`)
}
