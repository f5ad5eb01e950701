/** Step 3: probes each output with ffprobe (same sandbox rules as ffmpeg). */
import { stat } from 'node:fs/promises'
import { basename, join } from 'node:path'
import { INPUT_HARDENING } from '../../contracts/ffmpeg-policy.js'
import { mediaMetaFromProbe, type FfprobeOutput, type MediaMeta } from '../../contracts/output-file-meta.js'
import { runTool, startGatedTool, type ToolRun } from './child-process.js'
import { RunnerFailure } from './failure.js'

const PROBE_TIMEOUT_MS = 30_000

/** ffprobe's arguments for one file: the same input hardening as ffmpeg's, since an output's bytes are the user's to choose. */
function probeArgs(relativePath: string): string[] {
  return ['-v', 'error', ...INPUT_HARDENING, '-show_format', '-show_streams', '-of', 'json', relativePath]
}

async function sizeOf(workDir: string, relativePath: string): Promise<number> {
  try {
    return (await stat(join(workDir, relativePath))).size
  } catch {
    throw new RunnerFailure('OUTPUT_MISSING', `ffmpeg did not write ${basename(relativePath)}`)
  }
}

/** The media facts of a probe run; an unreadable probe leaves them null, the file itself is still delivered. */
function metaOf(run: ToolRun, relativePath: string, size: number): MediaMeta {
  let probe: FfprobeOutput = {}
  if (run.code === 0) {
    try {
      probe = JSON.parse(run.stdout) as FfprobeOutput
    } catch {
      // Left empty: every media field null.
    }
  }
  return mediaMetaFromProbe(probe, basename(relativePath), size)
}

export async function probeFile(ffprobePath: string, workDir: string, relativePath: string, timeoutMs = PROBE_TIMEOUT_MS): Promise<MediaMeta> {
  const size = await sizeOf(workDir, relativePath)
  const run = await runTool(ffprobePath, probeArgs(relativePath), { cwd: workDir, timeoutMs })
  return metaOf(run, relativePath, size)
}

/** A probe started before its file is complete: result() once it is, or cancel(). */
export interface PendingProbe {
  result(): Promise<MediaMeta>
  cancel(): void
}

/**
 * Starts the probe of a file that ffmpeg has yet to write. With the start
 * gate (runner-image/start-gate), ffprobe starts now and links its ~215
 * libraries while ffmpeg runs, then waits; result() lets it probe (~25 ms
 * instead of ~100). Without it, or when the gate did not hold, result()
 * probes the ordinary way.
 */
export function startProbe(ffprobePath: string, workDir: string, relativePath: string, gateLibrary: string | null): PendingProbe {
  if (!gateLibrary) return { result: () => probeFile(ffprobePath, workDir, relativePath), cancel: () => undefined }
  const gated = startGatedTool(ffprobePath, probeArgs(relativePath), { cwd: workDir, timeoutMs: PROBE_TIMEOUT_MS, gateLibrary })
  return {
    async result() {
      let size: number
      try {
        size = await sizeOf(workDir, relativePath)
      } catch (error) {
        gated.cancel()
        throw error
      }
      const run = await gated.open()
      return run ? metaOf(run, relativePath, size) : probeFile(ffprobePath, workDir, relativePath)
    },
    cancel: () => gated.cancel(),
  }
}
