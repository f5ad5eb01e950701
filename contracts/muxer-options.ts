/**
 * Options of the multi-file muxers (hls, dash, segment/ssegment), each checked
 * against FFmpeg 8.1.2's libavformat (hlsenc.c, dashenc.c, segment.c):
 * which muxer reads it, and how its value is held. Everything else of those
 * muxers is refused, in particular whatever reads a file or names a protocol.
 *
 * How FFmpeg resolves the names these options give (why `kind` differs):
 * - `cwd`: opened as given, relative to ffmpeg's cwd (the work dir), while the
 *   playlist lists only its basename: hls `hls_segment_filename`, segment
 *   `segment_list`. The policy rewrites the value into the output's folder,
 *   so the files land beside the playlist and the playlist still plays.
 * - `sibling`: the muxer prefixes it with the playlist's own directory: hls
 *   `master_pl_name` and `hls_fmp4_init_filename`, dash `init_seg_name`,
 *   `media_seg_name`, `hls_master_name`, `single_file_name`. The value must
 *   be a plain name; it is passed as it is.
 * - `text`: only written into the playlist (`hls_base_url`,
 *   `segment_list_entry_prefix`); it names nothing ffmpeg opens. Limited to
 *   printable characters without spaces, like any other value.
 */
import { ALLOWED_MUXERS } from './ffmpeg-formats.js'
import { sequencePatternProblem } from './output-patterns.js'

export type MuxerOptionValue =
  /** A number, duration, boolean or named constant (AVOption parses it; it opens nothing). */
  | 'plain'
  | 'text'
  | 'cwd'
  | 'sibling'
  /** hls `var_stream_map`: its `name:` values end up in file names through `%v`. */
  | 'streamMap'
  /** hls `hls_flags`, held to the flags below. */
  | 'hlsFlags'
  /** segment `segment_format`: a single-file muxer the policy allows. */
  | 'format'

export interface MuxerOptionRule {
  /** The `-f` names (or names ffmpeg guesses) that read this option. */
  muxers: readonly string[]
  value: MuxerOptionValue
}

/** The multi-file muxers a command may name: each writes only into its output's folder. */
export const MULTI_FILE_MUXERS: ReadonlySet<string> = new Set(['hls', 'dash', 'segment', 'ssegment', 'stream_segment'])
const SEGMENT = ['segment', 'ssegment', 'stream_segment']

const rules: Array<[string, readonly string[], MuxerOptionValue]> = [
  // hls (hlsenc.c)
  ...['hls_time', 'hls_init_time', 'hls_list_size', 'hls_delete_threshold', 'hls_allow_cache', 'hls_segment_size', 'hls_segment_type',
    'hls_fmp4_init_resend', 'hls_playlist_type', 'hls_start_number_source', 'master_pl_publish_rate']
    .map((name) => [name, ['hls'], 'plain'] as [string, readonly string[], MuxerOptionValue]),
  ['hls_base_url', ['hls'], 'text'],
  ['hls_segment_filename', ['hls'], 'cwd'],
  ['hls_fmp4_init_filename', ['hls'], 'sibling'],
  ['master_pl_name', ['hls'], 'sibling'],
  ['var_stream_map', ['hls'], 'streamMap'],
  ['hls_flags', ['hls'], 'hlsFlags'],
  // dash (dashenc.c)
  ...['seg_duration', 'frag_duration', 'frag_type', 'window_size', 'extra_window_size', 'use_template', 'use_timeline', 'single_file',
    'adaptation_sets', 'streaming', 'ldash', 'lhls', 'hls_playlist', 'dash_segment_type', 'global_sidx', 'index_correction',
    'mpd_profile', 'target_latency', 'min_playback_rate', 'max_playback_rate', 'update_period', 'write_prft']
    .map((name) => [name, ['dash'], 'plain'] as [string, readonly string[], MuxerOptionValue]),
  ['init_seg_name', ['dash'], 'sibling'],
  ['media_seg_name', ['dash'], 'sibling'],
  ['single_file_name', ['dash'], 'sibling'],
  ['hls_master_name', ['dash'], 'sibling'],
  // segment and ssegment (segment.c)
  ...['segment_time', 'segment_times', 'segment_frames', 'segment_time_delta', 'min_seg_duration', 'segment_wrap', 'segment_wrap_number',
    'segment_start_number', 'segment_list_size', 'segment_list_type', 'segment_list_flags', 'segment_atclocktime',
    'segment_clocktime_offset', 'segment_clocktime_wrap_duration', 'reference_stream', 'increment_tc', 'break_non_keyframes',
    'individual_header_trailer', 'write_header_trailer', 'reset_timestamps', 'initial_offset', 'write_empty_segments']
    .map((name) => [name, SEGMENT, 'plain'] as [string, readonly string[], MuxerOptionValue]),
  ['segment_list', SEGMENT, 'cwd'],
  ['segment_list_entry_prefix', SEGMENT, 'text'],
  ['segment_format', SEGMENT, 'format'],
]

/** Allowed muxer option name → rule. */
export const MUXER_OPTIONS: ReadonlyMap<string, MuxerOptionRule> = new Map(rules.map(([name, muxers, value]) => [name, { muxers, value }]))

/**
 * Options of these muxers that are refused with a reason of their own, so a
 * user learns why rather than only that the option is unknown.
 */
export const REFUSED_MUXER_OPTIONS: ReadonlyMap<string, string> = new Map([
  ['hls_key_info_file', 'reads a key info file (and the key file it names)'],
  ['hls_enc', 'writes a key file and needs key material ffkube does not hold'],
  ['hls_enc_key', 'writes a key file and needs key material ffkube does not hold'],
  ['hls_enc_key_url', 'belongs to hls_enc, which is not allowed'],
  ['hls_enc_iv', 'belongs to hls_enc, which is not allowed'],
  ['hls_subtitle_path', 'names a subtitle playlist outside the output\'s rules'],
  ['hls_segment_options', 'passes options to the segment muxer unchecked'],
  ['segment_format_options', 'passes options to the segment muxer unchecked'],
  ['format_options', 'passes options to the segment muxer unchecked'],
  ['segment_header_filename', 'writes a header file at a path of its own'],
  ['strftime', 'expands file names with strftime'],
  ['strftime_mkdir', 'creates directories from strftime names'],
  ['use_localtime', 'expands file names with strftime'],
  ['use_localtime_mkdir', 'creates directories from strftime names'],
  ['method', 'uploads over HTTP'],
  ['http_user_agent', 'uploads over HTTP'],
  ['http_persistent', 'uploads over HTTP'],
  ['http_opts', 'uploads over HTTP'],
  ['headers', 'uploads over HTTP'],
  ['timeout', 'uploads over HTTP'],
  ['utc_timing_url', 'makes players fetch a URL of the user\'s choice'],
  ['remove_at_exit', 'deletes the files the output is made of'],
])

/** hls_flags that only change how segments are cut or what the playlist says. */
const HLS_FLAGS = new Set([
  'single_file', 'temp_file', 'delete_segments', 'round_durations', 'discont_start', 'omit_endlist', 'split_by_time',
  'program_date_time', 'independent_segments', 'iframes_only',
])

/** A plain value of an AVOption (numbers, durations, constants, `id=0,streams=v id=1,streams=a`). */
const PLAIN_VALUE = /^[A-Za-z0-9_.:+\-,= ]{1,256}$/
/**
 * A prefix written before each playlist entry: an http(s) URL, or a relative
 * path that stays below the playlist. Never an absolute path or another
 * protocol: the runner probes the playlist with the hls demuxer, which would
 * follow such entries.
 */
const ENTRY_PREFIX = /^(?:https?:\/\/[A-Za-z0-9.-]+(?::\d{1,5})?(?:\/[A-Za-z0-9_.~%/-]*)?|[A-Za-z0-9_][A-Za-z0-9_.~/-]{0,255})$/

/**
 * A name a muxer writes beside its playlist, or (after rewriting) in the
 * output's folder: letters, digits, `_ . -`, the printf sequences, and for
 * dash the `$…$` template identifiers.
 */
const FILE_NAME = /^[A-Za-z0-9_][A-Za-z0-9_.%$-]{0,127}$/
const DASH_TEMPLATE = /\$(?:RepresentationID|Number|Bandwidth|Time|ext)(?:%0?\d{0,2}d)?\$/g

/** Why a muxer option's value is refused, or null. Pure. */
export function muxerOptionValueProblem(name: string, rule: MuxerOptionRule, value: string): string | null {
  switch (rule.value) {
    case 'plain':
      return PLAIN_VALUE.test(value) ? null : 'must be a plain value: letters, digits, spaces and _ . : + - , ='
    case 'text':
      return ENTRY_PREFIX.test(value) && !value.split('/').includes('..')
        ? null
        : 'must be an http(s) URL or a relative path without "..": it is written before every playlist entry'
    case 'cwd':
    case 'sibling':
      return fileNameProblem(name, value)
    case 'streamMap':
      return streamMapProblem(value)
    case 'hlsFlags': {
      const flags = value.split(/[+-]/).filter((flag) => flag !== '')
      const bad = flags.find((flag) => !HLS_FLAGS.has(flag))
      if (flags.length === 0 || !/^[+-]?[a-z_]+(?:[+-][a-z_]+)*$/.test(value)) return 'must be flags joined by + or -'
      return bad === undefined ? null : `flag ${bad} is not allowed (allowed: ${[...HLS_FLAGS].join(', ')})`
    }
    case 'format':
      return ALLOWED_MUXERS.has(value) && !MULTI_FILE_MUXERS.has(value) && value !== 'tee' && value !== 'image2'
        ? null
        : 'must be a single-file format the policy allows'
  }
}

function fileNameProblem(name: string, value: string): string | null {
  if (value.includes('/') || value.includes('\\')) return 'must be a plain file name: it is written in the output\'s own folder'
  if (/^[A-Za-z][A-Za-z0-9+.-]*:/.test(value) || value.includes(':')) return 'must be a plain file name, not a protocol or URL'
  if (value.includes('..')) return 'must not contain ".."'
  const dashStripped = name === 'init_seg_name' || name === 'media_seg_name' || name === 'single_file_name' ? value.replace(DASH_TEMPLATE, 'x') : value
  if (!FILE_NAME.test(dashStripped) || dashStripped.includes('$')) {
    return 'must be a plain file name: letters, digits, _ . - and the sequences %d, %0Nd, %v (and $Number$-style templates for dash)'
  }
  if (name === 'segment_list' && value.includes('%')) return 'names one file: no % sequences'
  return sequencePatternProblem(dashStripped)
}

/**
 * var_stream_map: variants separated by spaces, each `key:value` pairs joined
 * by commas (v, a, s: stream indexes; name, agroup, sgroup, ccgroup, language,
 * default). `name` becomes part of file names through `%v`, so every value is
 * held to letters, digits, `_` and `-`.
 */
function streamMapProblem(value: string): string | null {
  const variants = value.split(' ')
  const pair = /^(?:[vas]:\d{1,3}|(?:name|agroup|sgroup|ccgroup|language):[A-Za-z0-9_-]{1,64}|default:(?:yes|no|YES|NO))$/
  for (const variant of variants) {
    const bad = variant.split(',').find((entry) => !pair.test(entry))
    if (variant === '' || bad !== undefined) {
      return `"${bad ?? variant}" is not a variant entry: use v:N, a:N, s:N, name:…, agroup:…, sgroup:…, language:…, default:yes|no, joined by commas, variants separated by single spaces`
    }
  }
  return variants.length > 64 ? 'names more than 64 variants' : null
}
