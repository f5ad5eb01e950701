/**
 * What one phase of a command hands to the next: in one process, as values
 * (Fetched, RunOutcome); as separate processes (the Job's fetch, ffmpeg and
 * upload containers, which share only the work volume), as a small JSON file
 * at `.ffkube/phases.json` in the work directory.
 *
 * Only the runner writes it. ffmpeg cannot address it: the argument policy
 * (contracts/ffmpeg-paths.ts, ffmpeg-policy.ts) lets a command name only its
 * aliases, `inputs/…`, `outputs/<declared filename>` and plain filenames in
 * the work dir root, and neither a plain filename nor a declared output
 * filename may start with a dot, so no ffmpeg output can be `.ffkube` or lie
 * under it. yt-dlp writes only its fixed `inputs/<alias>.<ext>` template.
 * The upload phase still reads nothing else ffmpeg could have written except
 * the expected output files themselves (upload/upload-phase.ts).
 */
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { MediaMeta } from '../../contracts/output-file-meta.js'
import type { FailedFile } from '../../contracts/status-events.js'
import { RunnerFailure } from './failure.js'

/** The runner's own directory in the work dir. */
export const STATE_DIR = '.ffkube'
const STATE_FILE = 'phases.json'

/** What phase 1 (fetch) leaves. */
export interface Fetched {
  /** YTDLP_COMMAND: alias → work-dir path of each download; null for FFmpeg types (inputs sit at inputPathsFor). */
  downloads: Record<string, string> | null
  /** Download-only batches: URLs that failed while others arrived. */
  failedFiles: Record<string, FailedFile> | null
}

/** What phase 2 (run) hands to phase 3 in one process: ffmpeg's time and the probe of each file to upload, by alias. */
export interface RunOutcome {
  runSeconds: number | null
  /** Still running when the phase returns, so one process running every phase overlaps it with the upload. */
  metas: Promise<Record<string, MediaMeta>>
}

/** RunOutcome as recorded for a later process, its probes finished. */
export interface Ran {
  runSeconds: number | null
  metas: Record<string, MediaMeta>
}

export interface PhaseState {
  version: 1
  commandId: string
  fetched: Fetched | null
  ran: Ran | null
  /** Set by a fetch or run phase that failed and reported it, so an upload process waiting beside it stops (hand-over.ts). */
  failed?: true
}

/** An empty state for a command, before its fetch phase. */
export function initialState(commandId: string): PhaseState {
  return { version: 1, commandId, fetched: null, ran: null }
}

/** Writes the state atomically (temp file, then rename), so a killed phase never leaves half a file. */
export async function writePhaseState(workDir: string, state: PhaseState): Promise<void> {
  const dir = join(workDir, STATE_DIR)
  await mkdir(dir, { recursive: true, mode: 0o700 })
  const temp = join(dir, `${STATE_FILE}.${process.pid}.tmp`)
  await writeFile(temp, JSON.stringify(state), { mode: 0o600 })
  await rename(temp, join(dir, STATE_FILE))
}

/** The state an earlier phase of this command left; a missing or foreign one is an internal error, never guessed at. */
export async function readPhaseState(workDir: string, commandId: string): Promise<PhaseState> {
  const state = await readPhaseStateIfAny(workDir, commandId)
  if (!state) throw new RunnerFailure('INTERNAL_ERROR', 'no readable record of the earlier phases in the work directory (ENOENT)')
  return state
}

/** As readPhaseState, but null while no phase has written one yet. */
export async function readPhaseStateIfAny(workDir: string, commandId: string): Promise<PhaseState | null> {
  let state: PhaseState
  try {
    state = JSON.parse(await readFile(join(workDir, STATE_DIR, STATE_FILE), 'utf8')) as PhaseState
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null
    throw new RunnerFailure('INTERNAL_ERROR', `no readable record of the earlier phases in the work directory (${(error as NodeJS.ErrnoException).code ?? 'invalid JSON'})`)
  }
  if (state?.version !== 1 || state.commandId !== commandId) {
    throw new RunnerFailure('INTERNAL_ERROR', 'the work directory holds the record of another command')
  }
  return state
}

/** Records that a fetch or run phase failed (and reported it), keeping what the earlier ones recorded. */
export async function writeFailedState(workDir: string, commandId: string): Promise<void> {
  const earlier = await readPhaseStateIfAny(workDir, commandId).catch(() => null)
  await writePhaseState(workDir, { ...(earlier ?? initialState(commandId)), failed: true })
}
