/**
 * Phase 2 (run), after ffmpeg: probes each file to deliver with ffprobe
 * (contracts/media-probe.ts), in the same sandbox as ffmpeg.
 */
import { stat } from 'node:fs/promises'
import { basename, join } from 'node:path'
import { metaOfProbe, probeArgs, PROBE_TIMEOUT_MS } from '../../../contracts/media-probe.js'
import type { MediaMeta } from '../../../contracts/output-file-meta.js'
import type { SandboxHost } from '../../../contracts/sandbox.js'
import { runTool } from '../../../contracts/tool-process.js'
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

/**
 * Probes every file to deliver, side by side, once ffmpeg has written them:
 * each ffprobe of ffkube's build starts in a few ms, so nothing is started
 * ahead of ffmpeg (the start gate that did so went with Debian's ffprobe,
 * docs/adr/0004-ffmpeg-build.md).
 */
export async function probeFiles(
  files: readonly ProducedFile[],
  context: { workDir: string; ffprobePath: string; sandbox: SandboxHost | null },
): Promise<Record<string, MediaMeta>> {
  const probed = await Promise.all(files.map((file) => probeFile(context.ffprobePath, context.workDir, file.path, context.sandbox)))
  return Object.fromEntries(files.map((file, index) => [file.alias, probed[index] as MediaMeta]))
}
