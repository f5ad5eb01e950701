/**
 * Outputs of many files: which declared output filenames name a folder of
 * files rather than one file, the printf sequences allowed in them, and where
 * such an output's files live in the work dir. Pure; shared by the API's
 * filename rule, the argument policy and the runner's collection of files.
 *
 * The sequences are exactly those FFmpeg 8.1's muxers expand in a file name:
 * `%d` and `%0Nd` (image2 and segment through av_get_frame_filename2, hls
 * through replace_int_data_in_filename), `%v` (hls: the variant stream) and
 * `%%` (a literal percent sign). strftime sequences (`%Y`, `%s` …) are
 * refused: the options that would expand them (`-strftime`) are refused too.
 */

/** One allowed sequence: `%%`, `%v`, `%d`, `%0Nd` with N from 1 to 2 digits. */
const SEQUENCE = /%(?:%|v|0?\d{0,2}d)/g
/** Any `%` that SEQUENCE does not consume. */
const STRAY_PERCENT = /%/

/** Why `name` holds a `%` that is not an allowed sequence, or null. */
export function sequencePatternProblem(name: string): string | null {
  if (STRAY_PERCENT.test(name.replace(SEQUENCE, ''))) {
    return 'may hold only the sequences %d, %0Nd (e.g. %03d), %v and %% after a percent sign'
  }
  return null
}

/** Playlist extensions whose muxer ffmpeg picks by itself and which write segments beside the playlist. */
const PLAYLIST_MUXER_BY_EXTENSION: ReadonlyMap<string, string> = new Map([
  ['m3u8', 'hls'],
  ['mpd', 'dash'],
])

/** The multi-file muxer ffmpeg guesses from `filename`'s extension (hls, dash), or null. */
export function playlistMuxerOf(filename: string): string | null {
  const match = /\.([A-Za-z0-9]+)$/.exec(filename)
  return match ? (PLAYLIST_MUXER_BY_EXTENSION.get((match[1] as string).toLowerCase()) ?? null) : null
}

/**
 * True when a declared output filename names a folder of files: it holds a
 * `%` sequence (a numbered sequence, segments, variants) or it is an HLS or
 * DASH playlist (which writes its segments beside it). Decided from the
 * filename alone, so the API, the policy and the runner agree without
 * parsing the command; the policy refuses a multi-file muxer on any other name.
 */
export function isFolderOutput(filename: string): boolean {
  return filename.includes('%') || playlistMuxerOf(filename) !== null
}

/** The work-dir folder a multi-file output alias writes into: every file there is the alias's. */
export function outputFolder(alias: string): string {
  return `outputs/${alias}`
}

/** The work-dir path ffmpeg writes a declared output at: in its alias's folder when it is a folder output. */
export function declaredOutputPath(alias: string, filename: string): string {
  return isFolderOutput(filename) ? `${outputFolder(alias)}/${filename}` : `outputs/${filename}`
}

/**
 * A RegExp matching the names a pattern expands to (`thumb_%03d.jpg` →
 * thumb_001.jpg …), anchored, for finding a folder's main file.
 */
export function patternMatcher(pattern: string): RegExp {
  let source = ''
  let last = 0
  for (const match of pattern.matchAll(SEQUENCE)) {
    source += escapeRegExp(pattern.slice(last, match.index))
    const sequence = match[0]
    source += sequence === '%%' ? '%' : sequence === '%v' ? '[A-Za-z0-9_-]+' : '\\d+'
    last = match.index + sequence.length
  }
  source += escapeRegExp(pattern.slice(last))
  return new RegExp(`^${source}$`)
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&')
}

/** Name order with numbers compared as numbers (thumb_2 before thumb_10), then plain code-unit order. */
export function compareNames(a: string, b: string): number {
  const natural = NATURAL.compare(a, b)
  return natural !== 0 ? natural : a < b ? -1 : a > b ? 1 : 0
}

const NATURAL = new Intl.Collator('en', { numeric: true, sensitivity: 'variant' })

/**
 * The main file of a folder output among its members (relative paths): the
 * first member, in name order, that `main` (a name or a pattern) matches;
 * otherwise the first member. Null for an empty folder.
 */
export function mainMember(members: readonly string[], main: string): string | null {
  const sorted = [...members].sort(compareNames)
  const matcher = patternMatcher(main)
  return sorted.find((member) => matcher.test(member)) ?? sorted[0] ?? null
}
