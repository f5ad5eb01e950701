/**
 * Phase 2 (run), after ffmpeg: probes each file to deliver with ffprobe
 * (contracts/media-probe.ts), in the same sandbox as ffmpeg. A multi-file
 * output is probed by its main file; an HLS playlist there with the hls
 * demuxer, so its duration is the whole stream's.
 */
import { readFile, stat } from 'node:fs/promises'
import { basename, join } from 'node:path'
import { metaOfProbe, playlistProbeArgs, probeArgs, PROBE_TIMEOUT_MS } from '../../../contracts/media-probe.js'
import type { MediaMeta } from '../../../contracts/output-file-meta.js'
import { isConfinedPlaylist } from '../../../contracts/playlist-entries.js'
import type { SandboxHost } from '../../../contracts/sandbox.js'
import { runTool } from '../../../contracts/tool-process.js'
import { RunnerFailure } from '../failure.js'
import type { CollectedOutput } from '../produced-files.js'

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

export async function probeFile(
  ffprobePath: string,
  workDir: string,
  relativePath: string,
  sandbox: SandboxHost | null = null,
  timeoutMs = PROBE_TIMEOUT_MS,
  args: (path: string) => string[] = probeArgs,
): Promise<MediaMeta> {
  const size = await sizeOf(workDir, relativePath)
  const run = await runTool(ffprobePath, args(relativePath), { cwd: workDir, timeoutMs, sandbox: jail(sandbox) })
  return metaOfProbe(run, relativePath, size)
}

/**
 * Probes every file to deliver, side by side, once ffmpeg has written them:
 * each ffprobe of ffkube's build starts in a few ms, so nothing is started
 * ahead of ffmpeg (the start gate that did so went with Debian's ffprobe,
 * docs/adr/0004-ffmpeg-build.md).
 */
export async function probeOutputs(
  outputs: readonly CollectedOutput[],
  context: { workDir: string; ffprobePath: string; sandbox: SandboxHost | null },
): Promise<Record<string, MediaMeta>> {
  const probed = await Promise.all(
    outputs.map(async (output) =>
      probeFile(context.ffprobePath, context.workDir, output.mainPath, context.sandbox, PROBE_TIMEOUT_MS, (await playlistsConfined(context.workDir, output)) ? playlistProbeArgs : probeArgs),
    ),
  )
  return Object.fromEntries(outputs.map(({ file }, index) => [file.alias, probed[index] as MediaMeta]))
}

/** Playlists larger than this are not read as playlists: ffmpeg's own are a few kB per hour of segments. */
const MAX_PLAYLIST_BYTES = 1024 * 1024

/**
 * True when a folder output's main file is an HLS playlist the hls demuxer
 * may read: every .m3u8 of the folder (the master names the variants, each
 * variant its segments) names only plain files beside it (contracts/playlist-entries.ts).
 */
async function playlistsConfined(workDir: string, { members, mainPath }: CollectedOutput): Promise<boolean> {
  if (members === null || !/\.m3u8$/i.test(mainPath)) return false
  const playlists = members.filter((member) => /\.m3u8$/i.test(member.relative))
  if (playlists.some((member) => member.sizeBytes > MAX_PLAYLIST_BYTES)) return false
  const texts = await Promise.all(playlists.map((member) => readFile(join(workDir, member.path), 'utf8').catch(() => '')))
  return texts.every(isConfinedPlaylist)
}
