/**
 * The order of a command's three phases (main.ts says what each does), run
 * two ways:
 *
 * - `runCommand`: all three in one process (local mode: main.ts without
 *   --phase, and the warm pool worker). The run phase's probes are still
 *   running when the upload phase starts.
 * - `runCommandPhase`: one phase in its own process, as the Job's containers
 *   run them (operator/job-builder.ts). They share only the work volume: each
 *   reads what the earlier ones recorded (phase-state.ts) and records its own.
 *   A phase that fails reports the command FAILED itself and the process exits
 *   1, so Kubernetes runs no later container; only phase 3 reports SUCCESS.
 *
 * Either way every phase runs inside reportOutcome (report/outcome.ts).
 */
import type { CommandSpec } from '../../contracts/command-spec.js'
import { fetchPhase } from './fetch/fetch-phase.js'
import { RunnerFailure } from './failure.js'
import type { RunDeps } from './phase-context.js'
import { initialState, readPhaseState, writePhaseState } from './phase-state.js'
import { reportOutcome } from './report/outcome.js'
import { runPhase } from './run/run-phase.js'
import { maxOutputFiles } from './produced-files.js'
import { PreUploads } from './upload/pre-uploads.js'
import { loadUploader, preloadUploader, uploadPhase } from './upload/upload-phase.js'

/** Phase 1, 2 and 3, by the name `--phase` takes. */
export const PHASES = ['fetch', 'run', 'upload'] as const
export type Phase = (typeof PHASES)[number]

/** Runs every phase in this process and reports the outcome; returns the terminal status. */
export async function runCommand(spec: CommandSpec, deps: RunDeps): Promise<'SUCCESS' | 'FAILED'> {
  const outcome = await reportOutcome(spec, deps, async (context) => {
    // The storage SDK loads while inputs arrive (network-bound), not while ffmpeg is timed.
    preloadUploader()
    // A multi-file output's settled files are stored while ffmpeg writes the rest (upload/pre-uploads.ts).
    const early = new PreUploads(async () => (await loadUploader()).openStore(deps.uploadTarget(), spec.commandId), deps.workDir, maxOutputFiles(spec))
    try {
      const started = performance.now()
      const fetched = await fetchPhase(spec, context)
      const fetchedAt = performance.now()
      const ran = await runPhase(spec, fetched, context, early)
      const ranAt = performance.now()
      const success = await uploadPhase(spec, fetched, ran, context, early)
      const seconds = (from: number, to: number) => Math.round(to - from) / 1000
      return { ...success, runner_phase_seconds: { fetch: seconds(started, fetchedAt), run: seconds(fetchedAt, ranAt), deliver: seconds(ranAt, performance.now()) } }
    } catch (error) {
      await early.discard()
      throw error
    } finally {
      await early.close()
    }
  })
  return outcome === 'SUCCESS' ? 'SUCCESS' : 'FAILED'
}

/** Runs one phase; `DONE` means it succeeded and the next phase may start. */
export async function runCommandPhase(phase: Phase, spec: CommandSpec, deps: RunDeps): Promise<'SUCCESS' | 'FAILED' | 'DONE'> {
  return reportOutcome(spec, deps, async (context) => {
    context.log.debug({ phase }, 'phase starting')
    if (phase === 'fetch') {
      const fetched = await fetchPhase(spec, context)
      await writePhaseState(deps.workDir, { ...initialState(spec.commandId), fetched })
      return null
    }
    const state = await readPhaseState(deps.workDir, spec.commandId)
    if (!state.fetched) throw new RunnerFailure('INTERNAL_ERROR', `the ${phase} phase started before the fetch phase finished`)
    if (phase === 'run') {
      const ran = await runPhase(spec, state.fetched, context)
      await writePhaseState(deps.workDir, { ...state, ran: { runSeconds: ran.runSeconds, metas: await ran.metas } })
      return null
    }
    if (!state.ran) throw new RunnerFailure('INTERNAL_ERROR', 'the upload phase started before the run phase finished')
    return uploadPhase(spec, state.fetched, { runSeconds: state.ran.runSeconds, metas: Promise.resolve(state.ran.metas) }, context)
  })
}
