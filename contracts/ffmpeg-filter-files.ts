/**
 * Filter options that name files (FFmpeg 8.1.2's libavfilter, read option by
 * option for every allowed filter). An option that reads a file may name one
 * of the command's own files — `{{in_x}}` / `<<in_x>>` as the whole value, a
 * file an earlier command of the chain wrote, or an entry of the command's
 * folder — and the policy writes the work-dir path back into the graph. An
 * option that writes a file is refused, whatever its value.
 *
 * How each filter opens what it names, and why that is enough:
 * - drawtext `fontfile` (FreeType), `textfile`; lut3d/lut1d `file`; curves
 *   `psfile`; ass `filename` (libass): plain opens of one file, no protocol;
 * - ass/subtitles `fontsdir`: libass reads the font files of one directory;
 * - subtitles `filename`: its own avformat_open_input with no whitelist at all,
 *   so the runner checks the file's first bytes (a WorkFileCheck `subtitles`):
 *   a playlist or concat list posing as `.srt` ends the command before ffmpeg
 *   starts; this ffmpeg has no network protocol, and the sandbox holds the rest;
 * - movie/amovie `filename`: its own avformat_open_input too, but it takes
 *   `format_opts`, so the policy appends the same whitelists `-i` gets and
 *   refuses a user's `format_opts` and any `format_name` `-f` would refuse.
 *
 * Positional values bind to options in ffmpeg's order (`drawtext=font.ttf`
 * sets fontfile), so each rule lists that order as far as it allows them.
 */
import { ALLOWED_INPUT_FORMATS, DEMUXER_WHITELIST } from './ffmpeg-formats.js'
import { hasEmbeddedPlaceholder, placeholderAlias } from './ffmpeg-paths.js'
import { refuse } from './policy-refusal.js'
import { resolveWorkFile, type WorkFileCheck, type WorkFileCheckKind, type WorkFileContext } from './ffmpeg-work-files.js'
import type { FilterNode, FilterOption } from './filtergraph.js'

/** What an option does with its value. */
type FileUse = 'reads' | 'reads-dir' | 'reads-subtitles' | 'writes'

export interface FilterFileRule {
  /** Option names in ffmpeg's order for positional values; more positional values are refused. */
  positional: readonly string[]
  /** Short names → the option they set. */
  aliases?: Readonly<Record<string, string>>
  /** Options that name a file, by canonical name. */
  files: Readonly<Record<string, FileUse>>
  /**
   * True when the filter opens its file with a demuxer of its own that takes
   * `format_opts`: the policy appends the whitelists `-i` gets and refuses a
   * user's `format_opts` and a `format_name` that `-f` would refuse.
   */
  ownDemuxer?: boolean
}

const SUBTITLES_ORDER = ['filename', 'original_size', 'fontsdir', 'alpha']

/** Filters with options that name files → their rule. Every other allowed filter names none. */
export const FILTER_FILE_RULES: ReadonlyMap<string, FilterFileRule> = new Map<string, FilterFileRule>([
  ['subtitles', {
    positional: [...SUBTITLES_ORDER, 'charenc', 'stream_index', 'force_style', 'wrap_unicode'],
    aliases: { f: 'filename', si: 'stream_index' },
    files: { filename: 'reads-subtitles', fontsdir: 'reads-dir' },
  }],
  ['ass', {
    positional: [...SUBTITLES_ORDER, 'shaping'],
    aliases: { f: 'filename' },
    files: { filename: 'reads', fontsdir: 'reads-dir' },
  }],
  ['drawtext', { positional: ['fontfile', 'text', 'textfile'], files: { fontfile: 'reads', textfile: 'reads' } }],
  ['lut3d', { positional: ['file', 'clut', 'interp'], files: { file: 'reads' } }],
  ['lut1d', { positional: ['file', 'interp'], files: { file: 'reads' } }],
  ['curves', { positional: ['preset'], aliases: { m: 'master', r: 'red', g: 'green', b: 'blue' }, files: { psfile: 'reads', plot: 'writes' } }],
  ['paletteuse', { positional: ['dither', 'bayer_scale', 'diff_mode'], files: { debug_kdtree: 'writes' } }],
  ['loudnorm', { positional: ['I', 'LRA', 'TP'], aliases: { i: 'I', lra: 'LRA', tp: 'TP' }, files: { stats_file: 'writes' } }],
  ...(['movie', 'amovie'] as const).map((name) => [name, {
    positional: ['filename', 'format_name', 'stream_index', 'seek_point', 'streams', 'loop'],
    aliases: { f: 'format_name', si: 'stream_index', sp: 'seek_point', s: 'streams' },
    files: { filename: 'reads' },
    ownDemuxer: true,
  }] as const),
])

/** movie/amovie's own demuxer gets what every `-i` gets (escaped by the graph writer). */
const MOVIE_FORMAT_OPTS: FilterOption = { key: 'format_opts', value: `protocol_whitelist=file:format_whitelist=${DEMUXER_WHITELIST}` }

const CHECK_OF: Record<Exclude<FileUse, 'writes'>, WorkFileCheckKind> = { reads: 'file', 'reads-dir': 'directory', 'reads-subtitles': 'subtitles' }

/** A filter's options with its file options resolved: null when nothing changed. */
export interface ResolvedFilterFiles {
  options: FilterOption[] | null
  checks: WorkFileCheck[]
}

/**
 * Checks one filter's options against its file rule and resolves the files
 * they name. `where` starts every message (`-vf`). Throws a Refusal (policy-refusal.ts).
 */
export function resolveFilterFiles(filter: FilterNode, where: string, context: WorkFileContext): ResolvedFilterFiles {
  const rule = FILTER_FILE_RULES.get(filter.name)
  const checks: WorkFileCheck[] = []
  let changed = false
  const options = filter.options.map((option, index): FilterOption => {
    const name = optionName(filter, option, index, rule, where)
    const shown = `${where}: ${filter.name} option ${name}`
    if (hasEmbeddedPlaceholder(option.value)) {
      refuse('PLACEHOLDER_NOT_WHOLE_ARGUMENT', `${shown}=${option.value}: a placeholder must be the whole value of an option that names a file`)
    }
    const use = rule?.files[name]
    if (use === undefined) {
      if (placeholderAlias(option.value) !== null) {
        refuse('PLACEHOLDER_NOT_WHOLE_ARGUMENT', `${shown}=${option.value}: placeholders may only name a file (-i, an output, or a filter's file option such as subtitles filename or drawtext fontfile)`)
      }
      if (rule?.ownDemuxer && name === MOVIE_FORMAT_OPTS.key) {
        refuse('FILTER_OPTION_NOT_ALLOWED', `${shown}: the policy sets ${name} (the same whitelists as -i)`)
      }
      if (rule?.ownDemuxer && name === 'format_name' && !ALLOWED_INPUT_FORMATS.has(option.value)) {
        refuse('FORMAT_NOT_ALLOWED', `${shown}=${option.value}: not an allowed input format`)
      }
      return option
    }
    if (use === 'writes') refuse('FILTER_OPTION_NOT_ALLOWED', `${shown} writes a file and is not allowed`)
    if (option.value === '') refuse('FILTER_OPTION_NOT_ALLOWED', `${shown} is empty`)
    const file = resolveWorkFile(option.value, context, shown, 'FILTER_OPTION_NOT_ALLOWED')
    if (use === 'reads-dir' && !file.fromFolder) {
      refuse('FILTER_OPTION_NOT_ALLOWED', `${shown}=${option.value}: names a directory of the command's folder (input_compressed_folder), not a file`)
    }
    if (file.fromFolder || use === 'reads-subtitles') checks.push({ kind: CHECK_OF[use], path: file.path, argument: `${where} ${filter.name} ${name}` })
    if (file.path === option.value) return option
    changed = true
    return { key: option.key, value: file.path }
  })
  if (rule?.ownDemuxer) return { options: [...options, MOVIE_FORMAT_OPTS], checks }
  return { options: changed ? options : null, checks }
}

/** The option an entry sets: its key (through aliases), or the option its position binds to. */
function optionName(filter: FilterNode, option: FilterOption, index: number, rule: FilterFileRule | undefined, where: string): string {
  if (option.key !== null) return rule?.aliases?.[option.key] ?? option.key
  if (!rule) return `#${index + 1}`
  if (filter.options.slice(0, index).some((earlier) => earlier.key !== null)) {
    refuse('FILTER_OPTION_NOT_ALLOWED', `${where}: filter ${filter.name} takes no positional value after a key=value option`)
  }
  const name = rule.positional[index]
  if (name === undefined) {
    refuse('FILTER_OPTION_NOT_ALLOWED', `${where}: filter ${filter.name} takes at most ${rule.positional.length} positional values (${rule.positional.join(':')}); name the others (key=value)`)
  }
  return name
}
