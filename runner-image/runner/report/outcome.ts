/**
 * Runs one command from its spec to a terminal status event, all phases in
 * one process (local mode, the warm pool worker, `main.ts` without --phase):
 *   fetch (policy check, inputs or yt-dlp downloads) → run (ffmpeg, probe) → upload.
 * In a Job each phase runs in its own container instead (command-phases.ts).
 * Every expected failure becomes a FAILED event with an error_status; an
 * unexpected one becomes INTERNAL_ERROR with its details in the log only.
 */
import type { CommandSpec } from '../../../contracts/command-spec.js'
import type { StatusEventBody } from '../../../contracts/status-events.js'
import { fetchPhase } from '../fetch/fetch-phase.js'
import { RunnerFailure } from '../failure.js'
import { preloadUploader } from '../outputs-step.js'
import type { PhaseContext, RunDeps } from '../phase-context.js'
import { ProgressThrottle } from './progress-throttle.js'
import { runPhase } from '../run/run-phase.js'
import { uploadPhase, type SuccessBody } from '../upload/upload-phase.js'

export type { RunDeps } from '../phase-context.js'

/** Runs the command and reports its outcome; returns the terminal status. */
export async function runCommand(spec: CommandSpec, deps: RunDeps): Promise<'SUCCESS' | 'FAILED'> {
  const outcome = await reportOutcome(spec, deps, async (context) => {
    // The storage SDK loads while inputs arrive (network-bound), not while ffmpeg is timed.
    preloadUploader()
    const fetched = await fetchPhase(spec, context)
    const ran = await runPhase(spec, fetched, context)
    return uploadPhase(spec, fetched, ran, context)
  })
  return outcome === 'SUCCESS' ? 'SUCCESS' : 'FAILED'
}

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
  let terminal: StatusEventBody | null
  try {
    terminal = await work({ deps, progress, log })
    if (terminal) log.info({ ffmpeg_command_run_seconds: terminal.ffmpeg_command_run_seconds }, 'command succeeded')
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
  if (!terminal) return 'DONE'
  await deps.reporter.report(terminal)
  return terminal.type === 'SUCCESS' ? 'SUCCESS' : 'FAILED'
}
