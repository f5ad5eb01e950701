/**
 * Checks of the bytes of work-dir files that decide what ffmpeg opens next:
 * subtitle files (the subtitles filter probes them with every demuxer and
 * no whitelist), HLS playlists, DASH manifests and concat lists (their
 * entries are paths ffmpeg opens). Pure: the runner reads the files and hands the bytes here
 * (runner-image/runner/run/work-file-checks.ts), before the command runs.
 * Each returns why the file is refused, or null.
 */
import { PLAIN_FILENAME } from './ffmpeg-paths.js'
import { dashProblems, hlsLines, isDashManifest, hlsProblems, scanConcat } from './media-lists.js'

/** The most of a playlist or list the runner reads; a longer one is refused rather than half-checked. */
export const MAX_LIST_BYTES = 4 * 1024 * 1024
/** The head of a subtitle file the runner reads: formats are told by their first bytes. */
export const SUBTITLE_HEAD_BYTES = 64 * 1024

const EBML_MAGIC = Buffer.from([0x1a, 0x45, 0xdf, 0xa3])
const UTF8_BOM = Buffer.from([0xef, 0xbb, 0xbf])
const SRT_TIMING = /^\d{1,2}:\d{2}:\d{2}[,.]\d{1,3}\s*-->/

/**
 * Why a file given to the subtitles filter is not a subtitle file it may
 * read. Only formats told apart by their first bytes pass — SubRip, WebVTT,
 * ASS/SSA text, Matroska and MP4/MOV — so no playlist, concat list or AVI (a
 * GAB2 subtitle can hold a playlist) reaches the filter's unrestricted probe.
 */
export function subtitleFileProblem(head: Buffer): string | null {
  if (head.subarray(0, 4).equals(EBML_MAGIC)) return null
  if (head.subarray(4, 8).toString('latin1') === 'ftyp') return null
  const body = head.subarray(0, 3).equals(UTF8_BOM) ? head.subarray(3) : head
  const text = body.toString('latin1').replace(/^\s+/, '')
  if (/^WEBVTT(?:\s|$)/.test(text) || /^\[Script Info\]/i.test(text)) return null
  const [first = '', second = ''] = text.split(/\r?\n/)
  if ((/^\d+\s*$/.test(first) && SRT_TIMING.test(second)) || SRT_TIMING.test(first)) return null
  if (text.startsWith('#EXTM3U')) return 'it is an HLS playlist, not a subtitle file'
  if (text.startsWith('ffconcat')) return 'it is a concat list, not a subtitle file'
  return 'it is not a subtitle file the subtitles filter may read (SubRip, WebVTT, ASS/SSA, or subtitles inside Matroska or MP4)'
}

/**
 * Why an entry of a playlist or list cannot be read: it must be a path
 * relative to the list, each part a plain name, so it stays under the list's
 * own directory in the work dir (no `..`, no absolute path, no protocol).
 */
export function listEntryProblem(entry: string): string | null {
  const why = entryShapeProblem(entry)
  return why === null ? null : `"${entry}": ${why}`
}

/** listEntryProblem's rule, its reason not naming the entry. */
export function entryShapeProblem(entry: string): string | null {
  if (/^[A-Za-z][A-Za-z0-9+.-]*:/.test(entry)) return 'protocols and URLs are not allowed'
  if (entry.startsWith('/')) return 'absolute paths are not allowed'
  const bad = entry.split('/').find((part) => !PLAIN_FILENAME.test(part))
  if (bad !== undefined) return 'each part of an entry may use only letters, digits, _ . and -, must not be empty, "..", or start with . or -'
  return null
}

/**
 * Why an HLS playlist names something outside the work dir; null when every
 * URI is a safe relative path. Read as media-lists.ts reads it (ffmpeg's own
 * line rules), with listEntryProblem's stricter rule for each entry.
 */
export function hlsPlaylistProblem(text: string): string | null {
  if (text.split(/\r?\n/, 1)[0]?.trim().replace(/^\uFEFF/, '') !== '#EXTM3U') return 'it does not start with #EXTM3U'
  const problem = hlsProblems(text, listEntryProblem)[0]
  if (problem === undefined) return null
  // listEntryProblem's reasons name the entry; a too-long line's does not.
  return `line ${problem.line}: ${problem.reason.startsWith('"') ? problem.reason : `"${problem.entry}" ${problem.reason}`}`
}

/** The URIs of an HLS playlist that name further playlists (variants, renditions), which ffmpeg opens as playlists too. */
export function hlsNestedPlaylists(text: string): string[] {
  const uris = hlsLines(text).flatMap((line) => line.entries)
  return [...new Set(uris.filter((uri) => /\.m3u8$/i.test(uri)))]
}

/**
 * Why a concat list may not be read: an unknown directive, `option` (it could
 * change the nested file's whitelists; ffmpeg's `-safe 1` refuses it too), or
 * a `file` entry that is not a safe relative path. Read as media-lists.ts
 * reads it, with listEntryProblem's rule for each entry.
 */
export function concatListProblem(text: string): string | null {
  const { problems, stopped } = scanConcat(text, listEntryProblem)
  const problem = problems[0]
  if (problem?.option) return `line ${problem.line}: the option directive is not allowed`
  if (problem !== undefined) return `line ${problem.line}: ${problem.reason}`
  if (stopped !== null) return `line ${stopped.line}: unknown directive "${stopped.keyword}"`
  return null
}

/**
 * Why a DASH manifest names something outside the work dir, or is not read
 * (dash-manifest.ts: no DOCTYPE, no CDATA, no markup in a BaseURL, UTF-8);
 * null when every URL it names (BaseURL text, SegmentTemplate media and
 * initialization, SegmentURL media, Initialization sourceURL, with template
 * identifiers filled by a letter) is a safe relative path, and every
 * Representation id and bandwidth a plain name. ffmpeg gets the manifest as
 * a file: URL (ffmpeg-inputs.ts), so every relative URL resolves against the
 * manifest's directory: with no "..", it stays under it.
 */
export function dashManifestProblem(text: string): string | null {
  if (!isDashManifest(text)) return 'it is not a DASH manifest (no MPD element)'
  const problem = dashProblems(text, entryShapeProblem)[0]
  if (problem === undefined) return null
  return `line ${problem.line}: ${problem.entry === '' ? '' : `"${problem.entry}" `}${problem.reason}`
}
