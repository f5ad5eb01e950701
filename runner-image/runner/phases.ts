/**
 * The order of a command's three phases (main.ts says what each does), run
 * two ways:
 *
 * - `runCommand`: all three in one process (local mode: main.ts without
 *   --phase, and the warm pool worker). The run phase's probes are still
 *   running when the upload phase starts.
 * - `runCommandPhase`: a phase in its own process, as the Job's two
 *   containers run them (operator/job-builder.ts): `fetch-run` (phases 1 and
 *   2, no credential) and `upload` (phase 3), started together. They share
 *   only the work volume: the upload process waits for the run's record
 *   (phase-state.ts) and for the run process to end (hand-over.ts). A phase
 *   that fails reports the command FAILED itself and the process exits 1;
 *   only phase 3 reports SUCCESS. `fetch` and `run` alone run one phase each.
 *
 * Either way every phase runs inside reportOutcome (report/outcome.ts).
 */
import type { CommandSpec } from '../../contracts/command-spec.js'
import { fetchPhase } from './fetch/fetch-phase.js'
import { RunnerFailure } from './failure.js'
import type { RunDeps } from './phase-context.js'
import { announceRun, awaitHandOver, RUN_START_LIMIT_MS, type HandOver, type RunPresence } from './hand-over.js'
import { handedCookies, podCookiesToHandOver } from './fetch/pod-cookies.js'
import { initialState, readPhaseState, writeFailedState, writePhaseState } from './phase-state.js'
import { reportOutcome } from './report/outcome.js'
import { runPhase } from './run/run-phase.js'
import { maxOutputFiles } from './produced-files.js'
import { PreUploads } from './upload/pre-uploads.js'
import { loadUploader, preloadUploader, uploadPhase } from './upload/upload-phase.js'

/** Phase 1, 2 and 3, and 1 and 2 in one process, by the name `--phase` takes. */
export const PHASES = ['fetch', 'run', 'fetch-run', 'upload'] as const
export type Phase = (typeof PHASES)[number]

/** Runs every phase in this process and reports the outcome; returns the terminal status. */
export async function runCommand(spec: CommandSpec, deps: RunDeps): Promise<'SUCCESS' | 'FAILED'> {
  const outcome = await reportOutcome(spec, deps, async (context) => {
    // The storage SDK loads while inputs arrive (network-bound), not while ffmpeg is timed.
    preloadUploader()
    // A multi-file output's settled files are stored while ffmpeg writes the rest (upload/pre-uploads.ts).
    const early = new PreUploads(async () => (await loadUploader()).openStore(deps.uploadTarget(), spec.commandId), deps.workDir, maxOutputFiles(spec), spec.storageRoomBytes ?? Infinity)
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

/**
 * Runs one phase, or `fetch-run` (fetch then run in one process, the Job's
 * ffmpeg container); `DONE` means it succeeded and a later phase may start.
 * A fetch or run that fails reports FAILED and records `failed`, so an upload
 * process waiting beside it (hand-over.ts) stops. `fetch-run` listens on the
 * hand-over socket from its start to its end.
 */
export async function runCommandPhase(phase: Phase, spec: CommandSpec, deps: RunDeps): Promise<'SUCCESS' | 'FAILED' | 'DONE'> {
  if (phase === 'upload') return uploadWhenRan(spec, deps)
  let presence: RunPresence | null = null
  try {
    return await reportOutcome(spec, deps, async (context) => {
      context.log.debug({ phase }, 'phase starting')
      try {
        // A pod's yt-dlp command takes its account's cookies from the upload process before fetching (contracts/ytdlp-cookies.ts).
        const cookiesDir = phase === 'fetch-run' && spec.commandType === 'YTDLP_COMMAND' ? deps.config.ytdlpCookiesDir : null
        if (phase === 'fetch-run') presence = await announceRun(deps.workDir, { greeting: cookiesDir !== null })
        const state = phase === 'run' ? await readPhaseState(deps.workDir, spec.commandId) : initialState(spec.commandId)
        if (phase !== 'run') {
          const cookiesFile = cookiesDir && presence ? await handedCookies(presence.greeting, cookiesDir, RUN_START_LIMIT_MS, context.log) : null
          state.fetched = await fetchPhase(spec, cookiesFile ? { ...context, deps: { ...deps, config: { ...deps.config, ytdlpCookiesFile: cookiesFile } } } : context)
          await writePhaseState(deps.workDir, state)
        }
        if (phase === 'fetch') return null
        if (!state.fetched) throw new RunnerFailure('INTERNAL_ERROR', 'the run phase started before the fetch phase finished')
        const ran = await runPhase(spec, state.fetched, context)
        await writePhaseState(deps.workDir, { ...state, ran: { runSeconds: ran.runSeconds, metas: await ran.metas } })
        return null
      } catch (error) {
        await writeFailedState(deps.workDir, spec.commandId).catch((err: unknown) => context.log.error({ err }, 'could not record the failure for the upload process'))
        throw error
      }
    })
  } finally {
    // After the record is written and the outcome reported: the upload process wakes on this.
    await (presence as RunPresence | null)?.close()
  }
}

/**
 * Phase 3 as the Job's upload container runs it, started beside the ffmpeg
 * container: loads the storage SDK while the run goes on, then uploads once
 * the run has handed over. A run that failed reported it; one that was lost
 * (killed, crashed) is left to the operator, which reads why from the pod's
 * status (an OOM kill, an exit code): this process exits 1 without an event,
 * which would otherwise stand in for that better reason.
 */
async function uploadWhenRan(spec: CommandSpec, deps: RunDeps): Promise<'SUCCESS' | 'FAILED' | 'DONE'> {
  preloadUploader()
  let handOver: HandOver
  try {
    handOver = await awaitHandOver(deps.workDir, spec.commandId, await podCookiesToHandOver(spec, deps.config))
  } catch (error) {
    // A record it cannot read or of another command: reported, never guessed at.
    return reportOutcome(spec, deps, () => Promise.reject(error))
  }
  const log = deps.logger.child({ command_id: spec.commandId })
  if (handOver.kind === 'failed') {
    log.info('the run failed and reported it: nothing to upload')
    return 'DONE'
  }
  if (handOver.kind === 'lost') {
    log.error({ reason: handOver.reason }, 'no hand-over from the run process: nothing uploaded')
    return 'FAILED'
  }
  const { fetched, ran } = handOver.state
  return reportOutcome(spec, deps, async (context) => {
    context.log.debug({ phase: 'upload' }, 'phase starting')
    return uploadPhase(spec, fetched!, { runSeconds: ran!.runSeconds, metas: Promise.resolve(ran!.metas) }, context)
  })
}
