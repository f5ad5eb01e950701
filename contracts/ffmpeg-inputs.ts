/**
 * One `-i` of a command: the work-dir file it names and the options placed
 * right before it. Every input gets `-protocol_whitelist file` and the
 * demuxer whitelist; the three kinds of input that open further files get
 * more, each held to the work dir by ffmpeg's own options:
 *
 * - an image2 sequence (`frames/img_%03d.png`, folder entries only):
 *   `-f image2 -pattern_type sequence` (no glob: it would read any path);
 * - a concat list (`-f concat`): `-safe 1`, so an entry may not be absolute,
 *   hold `..` or a protocol, and may not use `option` (which could change the
 *   nested file's whitelists); the whitelist gains `concat` for this input only;
 * - an HLS playlist (`-f hls`, or a `.m3u8` file): `-f hls`, a short list of
 *   segment demuxers (no `avi`, so no GAB2 subtitle can hide a playlist),
 *   `-allowed_extensions` and `-allowed_segment_extensions` of media files
 *   only, `-extension_picky 1`;
 * - a DASH manifest (`-f dash`, or a `.mpd` file): `-f dash`, the demuxers of
 *   DASH segments only (the segment's demuxer is probed among all, then held
 *   to the whitelist, and may open nothing itself: dashdec.c's nested_io_open),
 *   `-allowed_extensions` of media segments (FFmpeg's default list, named here
 *   so that a change of default widens nothing).
 *
 * HLS, DASH and concat entries are paths ffmpeg resolves against the list's
 * location or its working directory; the file protocol alone would still let
 * an entry be absolute or climb with `..`, so the runner reads every list
 * before the command runs (the `hls`, `dash` and `concat` WorkFileChecks) and
 * the OS sandbox holds the rest.
 */
import { ALLOWED_INPUT_FORMATS, DEMUXER_WHITELIST } from './ffmpeg-formats.js'
import { describeBadFilename } from './ffmpeg-paths.js'
import { refuse } from './policy-refusal.js'
import { resolveWorkFile, sequenceProblem, type WorkFileCheck, type WorkFileContext } from './ffmpeg-work-files.js'

/** Options placed right before every plain `-i`: local files only, and only demuxers that open nothing else. */
export const INPUT_HARDENING: readonly string[] = ['-protocol_whitelist', 'file', '-format_whitelist', DEMUXER_WHITELIST]

/** Before an image2 sequence of folder entries. */
export const SEQUENCE_HARDENING: readonly string[] = [...INPUT_HARDENING, '-f', 'image2', '-pattern_type', 'sequence']

/** Before a concat list: its entries open with the same whitelist, so `concat` joins it here only. */
export const CONCAT_HARDENING: readonly string[] = [
  '-protocol_whitelist', 'file', '-format_whitelist', `${DEMUXER_WHITELIST},concat`, '-safe', '1',
]

/** What an HLS playlist may name: media segments, init sections, WebVTT and variant playlists. */
export const HLS_EXTENSIONS = 'ts,m4s,mp4,m4a,m4v,mov,fmp4,cmfv,cmfa,aac,ac3,eac3,ec3,mp3,vtt,webvtt,m3u8'
/** The demuxers an HLS playlist and its segments may use. */
export const HLS_DEMUXERS = 'hls,mpegts,mov,aac,ac3,eac3,mp3,webvtt'

/** What a DASH manifest may name: its segments (dashdec.c's default allowed_extensions). */
export const DASH_EXTENSIONS = 'aac,m4a,m4s,m4v,mov,mp4,webm,ts'
/** The demuxers a DASH manifest and its segments may use: fragmented MP4, WebM, MPEG-TS, ADTS. */
export const DASH_DEMUXERS = 'dash,mov,matroska,mpegts,aac'

/** Before a DASH manifest. */
export const DASH_HARDENING: readonly string[] = [
  '-protocol_whitelist', 'file', '-format_whitelist', DASH_DEMUXERS, '-f', 'dash', '-allowed_extensions', DASH_EXTENSIONS,
]

/** Before an HLS playlist. */
export const HLS_HARDENING: readonly string[] = [
  '-protocol_whitelist', 'file', '-format_whitelist', HLS_DEMUXERS, '-f', 'hls',
  '-allowed_extensions', HLS_EXTENSIONS, '-allowed_segment_extensions', HLS_EXTENSIONS, '-extension_picky', '1',
]

/** A planned `-i`: the options before it, its work-dir path, and what the runner checks first. */
export interface PlannedInput {
  options: readonly string[]
  path: string
  /** What follows `-i` when it is not `path` itself (a DASH manifest's `file:` URL). */
  url?: string
  checks: WorkFileCheck[]
}

/** Plans the `-i value` that follows a `-f format` (or none). */
export function planInput(value: string, format: string | null, context: WorkFileContext): PlannedInput {
  const argument = '-i'
  if (value.includes('%')) return planSequence(value, format, context)
  if (format === 'concat') {
    const { path } = resolveWorkFile(value, context, argument, 'INPUT_NOT_ALLOWED')
    return { options: CONCAT_HARDENING, path, checks: [{ kind: 'concat', path, argument: `-f concat -i ${value}` }] }
  }
  const { path, fromFolder } = resolveWorkFile(value, context, argument, 'INPUT_NOT_ALLOWED')
  if (format === 'hls' || (format === null && /\.m3u8$/i.test(path))) {
    return { options: HLS_HARDENING, path, checks: [{ kind: 'hls', path, argument: `-i ${value}` }] }
  }
  if (format === 'dash' || (format === null && /\.mpd$/i.test(path))) {
    // As a file: URL: given a bare relative path, dashdec.c joins the manifest's directory to each
    // segment twice (dir/dir/seg.m4s) unless the manifest has a BaseURL; a URL base resolves once.
    return { options: DASH_HARDENING, path, url: `file:${path}`, checks: [{ kind: 'dash', path, argument: `-i ${value}` }] }
  }
  if (format !== null && !ALLOWED_INPUT_FORMATS.has(format)) refuse('FORMAT_NOT_ALLOWED', `-f ${format} is not an allowed input format`)
  return { options: INPUT_HARDENING, path, checks: fromFolder ? [{ kind: 'file', path, argument: `-i ${value}` }] : [] }
}

/** A numbered image sequence: of the folder's entries, or one an earlier command of the chain wrote. */
function planSequence(value: string, format: string | null, context: WorkFileContext): PlannedInput {
  if (format !== null && format !== 'image2') {
    refuse('FORMAT_NOT_ALLOWED', `-f ${format} -i ${value}: a numbered sequence is read by -f image2 only`)
  }
  const written = context.written?.get(value)
  if (written !== undefined) return { options: SEQUENCE_HARDENING, path: written, checks: [] }
  if (!context.folder) {
    const why = describeBadFilename(value) ?? 'filename patterns are not allowed'
    refuse('INPUT_NOT_ALLOWED', `-i ${value}: ${why} (a numbered sequence reads the entries of an input_compressed_folder)`)
  }
  const why = sequenceProblem(value)
  if (why !== null) refuse('INPUT_NOT_ALLOWED', `-i ${value}: ${why}`)
  return { options: SEQUENCE_HARDENING, path: value, checks: [{ kind: 'sequence', path: value, argument: `-i ${value}` }] }
}
