/**
 * How a phase ends, told: every phase runs inside `reportOutcome`, which gives
 * it a progress channel and reports its terminal event. Every expected failure
 * becomes a FAILED event with an error_status; an unexpected one becomes
 * INTERNAL_ERROR with its details in the log only.
 */
import type { CommandSpec } from '../../../contracts/command-spec.js'
import type { StatusEventBody, SuccessEvent } from '../../../contracts/status-events.js'
import { RunnerFailure } from '../failure.js'
import type { PhaseContext, RunDeps } from '../phase-context.js'
import { ProgressThrottle } from './progress-throttle.js'
import { LogShipper } from './log-shipper.js'
import { logPathRewriter } from './log-paths.js'
import { realpathSync } from 'node:fs'

/** What the last phase returns: the SUCCESS event before its envelope. */
export type SuccessBody = Omit<SuccessEvent, 'command_id' | 'event_id' | 'emitted_at'>

/**
 * Runs `work` with a progress channel and reports how it ended: its SUCCESS
 * event, or a FAILED event for whatever it threw. Work that returns null (a
 * phase before the last) reports nothing terminal: `DONE`.
 */
export async function reportOutcome(
  spec: CommandSpec,
  deps: RunDeps,
  work: (context: PhaseContext) => Promise<SuccessBody | null>,
): Promise<'SUCCESS' | 'FAILED' | 'DONE'> {
  const log = deps.logger.child({ command_id: spec.commandId })
  const progress = new ProgressThrottle(deps.reporter, log, deps.config.progressIntervalMs)
  const logs = newLogShipper(spec, deps, log)
  let terminal: StatusEventBody | null
  try {
    terminal = await work({ deps, progress, logs, log })
    if (terminal) log.info({ ffmpeg_command_run_seconds: terminal.ffmpeg_command_run_seconds, runner_phase_seconds: terminal.runner_phase_seconds }, 'command succeeded')
  } catch (error) {
    if (error instanceof RunnerFailure) {
      terminal = { type: 'FAILED', error_status: error.errorStatus, error_message: error.message, ffmpeg_command_run_seconds: null, failed_files: error.failedFiles }
      log.info({ error_status: error.errorStatus, error_message: error.message }, 'command failed')
    } else {
      terminal = { type: 'FAILED', error_status: 'INTERNAL_ERROR', error_message: 'the runner failed unexpectedly', ffmpeg_command_run_seconds: null, failed_files: null }
      log.error({ err: error }, 'runner failed unexpectedly')
    }
  }
  // A SUCCESS supersedes any stage still waiting for its interval.
  await progress.flush(terminal?.type === 'SUCCESS' ? 'drop' : 'send')
  // Before the terminal event: a client that sees the command end finds its log complete (as far as the stream's order goes).
  await logs.flush()
  if (!terminal) return 'DONE'
  await deps.reporter.report(terminal)
  return terminal.type === 'SUCCESS' ? 'SUCCESS' : 'FAILED'
}

/** The command's log, rewritten for the client, going where the reporter sends it (nowhere when it keeps none). */
function newLogShipper(spec: CommandSpec, deps: RunDeps, log: PhaseContext['log']): LogShipper {
  const reporter = deps.reporter
  const sink = reporter.log ? (chunk: Parameters<NonNullable<typeof reporter.log>>[0]) => reporter.log!(chunk) : null
  let resolved = deps.workDir
  try {
    resolved = realpathSync(deps.workDir)
  } catch {
    // Not there (yet): the path as given is the one tools see.
  }
  const rewrite = logPathRewriter([deps.workDir, resolved], [deps.config.ffmpegPath, deps.config.ffprobePath, deps.config.ytdlpPath])
  return new LogShipper(spec.commandId, sink, rewrite, log)
}
