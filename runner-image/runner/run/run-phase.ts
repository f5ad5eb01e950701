/**
 * Phase 2, run (the Job's `ffmpeg` init container): runs the user's ffmpeg
 * arguments on what the fetch phase brought, checks that every file to
 * deliver exists and probes it. This phase holds no credential: its container
 * gets no Secret and no token, and ffmpeg and ffprobe run with PATH only.
 */
import { mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import { isZipped } from '../../../contracts/compressed-outputs.js'
import type { CommandSpec } from '../../../contracts/command-spec.js'
import type { WorkFileCheck } from '../../../contracts/ffmpeg-work-files.js'
import { planCommand } from '../command-plan.js'
import { runFfmpegCommands } from './ffmpeg.js'
import { watchFileCount } from './file-count-watch.js'
import { tooManyFiles } from '../output-folders.js'
import type { PhaseContext } from '../phase-context.js'
import type { Fetched, RunOutcome } from '../phase-state.js'
import { collectOutputs, maxOutputFiles, producedFiles, type ProducedFile } from '../produced-files.js'
import { probeOutputs } from './probes.js'

/** Told of the folder outputs while ffmpeg runs, so their settled files can be stored early (upload/pre-uploads.ts). */
export interface EarlyStore {
  offer(folders: ReadonlyArray<{ alias: string; path: string }>): Promise<void>
  stop(): void
}

/** How often an EarlyStore is offered the folders while ffmpeg runs. */
const OFFER_INTERVAL_MS = 250

export async function runPhase(spec: CommandSpec, fetched: Fetched, context: PhaseContext, early: EarlyStore | null = null): Promise<RunOutcome> {
  const { deps, progress } = context
  await mkdir(join(deps.workDir, 'outputs'), { recursive: true })
  // The policy runs again here: the run phase trusts no earlier process's verdict.
  const plan = planCommand(spec, fetched, deps.ffmpegPlanner)
  const files = producedFiles(spec, fetched, plan.folders)
  const folders = files.filter((file) => file.main !== null)
  // ffmpeg's muxers create no directory for their output: each folder output's is made here.
  for (const folder of folders) await mkdir(join(deps.workDir, folder.path), { recursive: true })
  const max = maxOutputFiles(spec)
  // A zipped output is stored as one zip after ffmpeg: none of its files goes up early.
  const earlyFolders = folders.filter((folder) => !isZipped(spec.compressOutputs, folder.alias))
  const runSeconds = plan.argvs === null ? null : await runFfmpeg(plan.argvs, plan.checks, folders, earlyFolders, max, context, early)
  progress.stage('PROBING')
  // A missing output fails the command as OUTPUT_MISSING here, before anything is uploaded; so do too many files.
  const collected = await collectOutputs(deps.workDir, files, max)
  // An output delivered inside a zip is not probed: its result describes the zip (upload/output-zips.ts).
  const probed = collected.filter(({ file }) => !isZipped(spec.compressOutputs, file.alias))
  const metas = probeOutputs(probed, { workDir: deps.workDir, ffprobePath: deps.config.ffprobePath, sandbox: deps.config.sandbox })
  // Observed so a rejection before the caller awaits it is not unhandled; the caller still sees it.
  metas.catch(() => undefined)
  return { runSeconds, metas }
}

/** Runs ffmpeg, watching the folder outputs' file count when there are any; too many files stops it. */
async function runFfmpeg(
  argvs: string[][],
  checks: WorkFileCheck[][],
  folders: readonly ProducedFile[],
  earlyFolders: readonly ProducedFile[],
  max: number,
  { deps, progress, logs }: PhaseContext,
  early: EarlyStore | null,
): Promise<number> {
  progress.stage('RUNNING')
  const watch = folders.length > 0 ? watchFileCount(deps.workDir, folders.map((folder) => folder.path), max) : null
  const offering = early && earlyFolders.length > 0 ? offerWhileRunning(early, earlyFolders) : null
  try {
    return await runFfmpegCommands(argvs, {
      checks,
      ffmpegPath: deps.config.ffmpegPath,
      workDir: deps.workDir,
      timeoutMs: deps.config.ffmpegTimeoutMs,
      sandbox: deps.config.sandbox,
      onProgress: (percent) => progress.percent(percent),
      log: logs,
      ...(watch ? { signal: watch.signal } : {}),
    })
  } catch (error) {
    if (watch?.signal.aborted) throw tooManyFiles(max)
    throw error
  } finally {
    watch?.stop()
    offering?.stop()
  }
}

/** Offers the folders every OFFER_INTERVAL_MS, one offer at a time. */
function offerWhileRunning(early: EarlyStore, folders: readonly ProducedFile[]): { stop(): void } {
  const targets = folders.map((folder) => ({ alias: folder.alias, path: folder.path }))
  let busy = false
  const timer = setInterval(() => {
    if (busy) return
    busy = true
    early.offer(targets).finally(() => (busy = false)).catch(() => undefined)
  }, OFFER_INTERVAL_MS)
  return {
    stop: () => {
      clearInterval(timer)
      early.stop()
    },
  }
}
