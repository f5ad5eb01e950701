/**
 * One local runner watched until it exits: killed when it overruns its
 * deadline or overfills its work directory, and its end judged, so the
 * executor publishes FAILED on its behalf exactly when it could not report.
 *
 * The work-directory cap is local mode's counterpart of a Kubernetes Job's
 * emptyDir `sizeLimit`: while a runner works, its directory is measured, and
 * the first measurement over the cap kills it. It measures from outside the
 * runner and its tools, so it holds whether or not they run in a sandbox,
 * and whatever wrote the bytes: a fetch, yt-dlp, or an ffmpeg looping its
 * input forever.
 */
import { lstatSync, type Stats } from 'node:fs'
import { readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { setImmediate as nextTurn } from 'node:timers/promises'
import type { CommandSpec } from '../../contracts/command-spec.js'
import type { RunnerExit, RunnerProcess } from './runner-pool.js'

export interface RunnerLimits {
  deadlineMs: number
  workDir: string
  workDirMaxBytes: number
}

/** For executors built without config (tests): api/config.ts's defaults of COMMAND_DEADLINE_SECONDS and COMMAND_WORK_DIR_MAX_BYTES. */
const DEFAULT_DEADLINE_MS = 900_000
const DEFAULT_WORK_DIR_MAX_BYTES = 8 * 1024 ** 3

/** The command's own limit (max_command_run_seconds) within this host's ceiling (COMMAND_DEADLINE_SECONDS), and its work dir's cap. */
export function runnerLimits(spec: CommandSpec, workDir: string, host: { deadlineMs?: number | undefined; workDirMaxBytes?: number | undefined }): RunnerLimits {
  const hostDeadlineMs = host.deadlineMs ?? DEFAULT_DEADLINE_MS
  const deadlineMs = spec.limits ? Math.min(spec.limits.maxRunSeconds * 1000, hostDeadlineMs) : hostDeadlineMs
  return { deadlineMs, workDir, workDirMaxBytes: host.workDirMaxBytes ?? DEFAULT_WORK_DIR_MAX_BYTES }
}

/** How a supervised runner ended: its exit, and which limit (if either) had it killed. */
export interface SupervisedExit {
  exit: RunnerExit
  timedOut: boolean
  /** The work directory's size when it passed the cap; null when it never did. */
  workDirBytes: number | null
}

/** Waits for the runner to exit, killing it at the first limit it passes. */
export async function superviseRunner(runner: RunnerProcess, limits: RunnerLimits): Promise<SupervisedExit> {
  let timedOut = false
  let workDirBytes: number | null = null
  const deadline = setTimeout(() => {
    timedOut = true
    runner.kill('SIGKILL')
  }, limits.deadlineMs)
  const watch = watchWorkDir(limits.workDir, limits.workDirMaxBytes, (bytes) => {
    workDirBytes = bytes
    runner.kill('SIGKILL')
  })
  try {
    const exit = await runner.exited
    return { exit, timedOut, workDirBytes }
  } finally {
    clearTimeout(deadline)
    watch.stop()
  }
}

/** A command's failure, as the executor reports it when the runner could not. */
export interface RunnerFailure {
  errorStatus: 'TIMEOUT' | 'WORK_DIR_LIMIT_EXCEEDED' | 'RUNNER_FAILED'
  message: string
}

/** The failure to report for a runner that was not cancelled; null when the runner reported its outcome itself. */
export function failureOf(ended: SupervisedExit, limits: RunnerLimits): RunnerFailure | null {
  if (ended.timedOut) return { errorStatus: 'TIMEOUT', message: `the command did not finish within ${Math.round(limits.deadlineMs / 1000)} s` }
  if (ended.workDirBytes !== null) return { errorStatus: 'WORK_DIR_LIMIT_EXCEEDED', message: workDirLimitMessage(limits.workDirMaxBytes) }
  // 0 and 1 mean the runner reported SUCCESS or FAILED itself; anything else means it could not.
  if (ended.exit.code === 0 || ended.exit.code === 1) return null
  return { errorStatus: 'RUNNER_FAILED', message: `the runner ended unexpectedly (${ended.exit.signal ?? `exit code ${ended.exit.code}`})` }
}

/**
 * Entries measured between two turns of the event loop. The walk runs beside
 * every command, four times a second: with a promise per lstat it cost ~8 ms
 * of CPU per 200 files, most of the service's CPU beside an HLS encode
 * (docs/benchmarks/multi-file.md); synchronous lstat calls cost ~1.5 ms, and
 * a batch this size holds the loop ~2 ms, however large the tree. Each
 * directory is still listed without blocking (one call, however many entries).
 */
const ENTRIES_PER_TURN = 256

/** Its lstat, or null when it vanished or cannot be read. */
function statOf(path: string): Stats | null {
  try {
    return lstatSync(path, { throwIfNoEntry: false }) ?? null
  } catch {
    return null
  }
}

/**
 * Bytes a directory tree holds: per file, its apparent size or its allocated
 * blocks, whichever is larger, so a sparse file counts as what an upload would
 * read and a heap of small files as the disk they take. Entries that vanish
 * while it walks are skipped; symbolic links are not followed.
 */
export async function directoryBytes(dir: string): Promise<number> {
  let total = 0
  let sinceTurn = 0
  const pending = [dir]
  for (let current = pending.pop(); current !== undefined; current = pending.pop()) {
    for (const entry of await readdir(current, { withFileTypes: true }).catch(() => [])) {
      if (++sinceTurn >= ENTRIES_PER_TURN) {
        sinceTurn = 0
        await nextTurn()
      }
      const path = join(current, entry.name)
      if (entry.isDirectory()) pending.push(path)
      const stats = statOf(path)
      if (stats) total += Math.max(stats.size, stats.blocks * 512)
    }
  }
  return total
}

/** Measures `dir` until stopped; calls `onExceeded(bytes)` once, the first time it holds more than `maxBytes`. */
function watchWorkDir(dir: string, maxBytes: number, onExceeded: (bytes: number) => void, intervalMs = 250): { stop(): void } {
  let stopped = false
  let timer: NodeJS.Timeout | null = null
  // One measurement at a time, the next scheduled when this one ends; a tree of many files (an image
  // sequence) takes longer to walk, and the pause grows with it so the watch costs at most a fifth of a core.
  const measure = async () => {
    const started = performance.now()
    const bytes = await directoryBytes(dir)
    if (stopped) return
    if (bytes > maxBytes) {
      stopped = true
      onExceeded(bytes)
      return
    }
    timer = setTimeout(() => void measure(), Math.max(intervalMs, 4 * (performance.now() - started)))
  }
  timer = setTimeout(() => void measure(), intervalMs)
  return {
    stop() {
      stopped = true
      if (timer) clearTimeout(timer)
    },
  }
}

/** What a command that overfilled its work directory says (error_status WORK_DIR_LIMIT_EXCEEDED). */
function workDirLimitMessage(maxBytes: number): string {
  return `the command's files grew past the work-directory limit of ${maxBytes} bytes (${describeBytes(maxBytes)})`
}

/** `8589934592` → `8 GiB`. */
function describeBytes(bytes: number): string {
  const units = ['bytes', 'KiB', 'MiB', 'GiB', 'TiB']
  let value = bytes
  let unit = 0
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024
    unit++
  }
  return `${Number(value.toFixed(1))} ${units[unit]}`
}
