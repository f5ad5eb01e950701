/**
 * Phase 2 (run), after ffmpeg: probes each file to deliver with ffprobe
 * (contracts/media-probe.ts), in the same sandbox as ffmpeg, started before
 * ffmpeg so its start overlaps ffmpeg's run (the start gate).
 */
import { stat } from 'node:fs/promises'
import { basename, join } from 'node:path'
import { metaOfProbe, probeArgs, PROBE_TIMEOUT_MS } from '../../../contracts/media-probe.js'
import type { MediaMeta } from '../../../contracts/output-file-meta.js'
import type { SandboxHost } from '../../../contracts/sandbox.js'
import { runTool, startGatedTool } from '../../../contracts/tool-process.js'
import { RunnerFailure } from '../failure.js'
import type { ProducedFile } from '../produced-files.js'

async function sizeOf(workDir: string, relativePath: string): Promise<number> {
  try {
    return (await stat(join(workDir, relativePath))).size
  } catch {
    throw new RunnerFailure('OUTPUT_MISSING', `ffmpeg did not write ${basename(relativePath)}`)
  }
}

/** ffprobe jailed without network, like ffmpeg; a null host runs it bare (a runner pod). */
function jail(sandbox: SandboxHost | null) {
  return { host: sandbox, network: 'none' } as const
}

export async function probeFile(ffprobePath: string, workDir: string, relativePath: string, sandbox: SandboxHost | null = null, timeoutMs = PROBE_TIMEOUT_MS): Promise<MediaMeta> {
  const size = await sizeOf(workDir, relativePath)
  const run = await runTool(ffprobePath, probeArgs(relativePath), { cwd: workDir, timeoutMs, sandbox: jail(sandbox) })
  return metaOfProbe(run, relativePath, size)
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
export function startProbe(ffprobePath: string, workDir: string, relativePath: string, gateLibrary: string | null, sandbox: SandboxHost | null = null): PendingProbe {
  if (!gateLibrary) return { result: () => probeFile(ffprobePath, workDir, relativePath, sandbox), cancel: () => undefined }
  const gated = startGatedTool(ffprobePath, probeArgs(relativePath), { cwd: workDir, timeoutMs: PROBE_TIMEOUT_MS, gateLibrary, sandbox: jail(sandbox) })
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
      return run ? metaOfProbe(run, relativePath, size) : probeFile(ffprobePath, workDir, relativePath, sandbox)
    },
    cancel: () => gated.cancel(),
  }
}

/** At most this many probes wait at the gate at once (each holds an idle ffprobe); more outputs are probed when needed. */
const GATED_PROBES = 4

/**
 * Starts the probes of files ffmpeg has yet to write (see startProbe):
 * results() once every file is complete, or cancel() when ffmpeg failed.
 */
export function startProbes(
  files: readonly ProducedFile[],
  context: { workDir: string; ffprobePath: string; startGate: string | null; sandbox: SandboxHost | null },
): { results(): Promise<Record<string, MediaMeta>>; cancel(): void } {
  const probes = files.map((file, index) => startProbe(context.ffprobePath, context.workDir, file.path, index < GATED_PROBES ? context.startGate : null, context.sandbox))
  return {
    async results() {
      const probed = await Promise.all(probes.map((probe) => probe.result()))
      return Object.fromEntries(files.map((file, index) => [file.alias, probed[index] as MediaMeta]))
    },
    cancel: () => probes.forEach((probe) => probe.cancel()),
  }
}
