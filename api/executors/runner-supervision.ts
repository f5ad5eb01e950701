/**
 * One local runner watched until it exits: killed when it overruns its
 * deadline or overfills its work directory, and its end judged, so the
 * executor publishes FAILED on its behalf exactly when it could not report.
 */
import type { CommandSpec } from '../../contracts/command-spec.js'
import type { RunnerExit, RunnerProcess } from './runner-pool.js'
import { watchWorkDir, workDirLimitMessage } from './work-dir-watch.js'

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
