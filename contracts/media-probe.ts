/**
 * ffprobe on a file whose bytes a user chose (a command's output, an upload,
 * a store-file download): the arguments, and the media facts read from its
 * answer. The runner's probe step and the file processor both run it, each
 * through tool-process.ts in the sandbox.
 */
import { basename } from 'node:path'
import { DEMUXER_WHITELIST } from './ffmpeg-formats.js'
import { INPUT_HARDENING } from './ffmpeg-policy.js'
import { mediaMetaFromProbe, type FfprobeOutput, type MediaMeta } from './output-file-meta.js'
import type { ToolRun } from './tool-process.js'

/** How long one probe may take. */
export const PROBE_TIMEOUT_MS = 30_000

/** ffprobe's arguments for one file: the same input hardening as ffmpeg's, since the bytes are the user's to choose. */
export function probeArgs(relativePath: string): string[] {
  return ['-v', 'error', ...INPUT_HARDENING, '-show_format', '-show_streams', '-of', 'json', relativePath]
}

/**
 * ffprobe's arguments for the playlist of a multi-file output the runner's
 * own ffmpeg wrote (never for a user's upload): the hls demuxer may read it
 * and the segments it lists, on the `file` protocol only, and the runner
 * runs it in the same jail as ffmpeg, cwd the work dir. The policy keeps
 * those entries inside the output's folder (muxer-options.ts: no absolute
 * base URL). A DASH manifest is probed the ordinary way (the dash demuxer
 * is not in DEMUXER_WHITELIST) and reads as null.
 */
export function playlistProbeArgs(relativePath: string): string[] {
  if (!/\.m3u8$/i.test(relativePath)) return probeArgs(relativePath)
  return ['-v', 'error', '-protocol_whitelist', 'file', '-format_whitelist', `hls,${DEMUXER_WHITELIST}`, '-show_format', '-show_streams', '-of', 'json', relativePath]
}

/** The media facts of a probe run; an unreadable probe leaves them null, the file itself is still delivered. */
export function metaOfProbe(run: ToolRun, relativePath: string, size: number): MediaMeta {
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
