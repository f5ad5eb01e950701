/**
 * The ffmpeg command-line options a command may use, and how each one is read.
 * Everything else is refused. The arity of every entry must match ffmpeg's
 * (5.1) exactly: if the policy took a value-taking option for a flag, the value
 * would escape the checks as if it were an output name.
 *
 * Left out on purpose (the reason in brackets): `-filter_script`,
 * `-filter_complex_script`, `-/opt` [read a file]; `-pre`, `-fpre`, `-vpre`,
 * `-apre`, `-spre` [preset files]; `-attach`, `-dump_attachment` [read/write
 * arbitrary files]; `-progress`, `-report`, `-vstats`, `-vstats_file`,
 * `-passlogfile`, `-pass`, `-sdp_file`, `-stats_*` [write files]; `-x264-params`,
 * `-x264opts`, `-x265-params`, `-aom-params`, `-svtav1-params` [encoder
 * strings that name stats and dump files]; `-protocol_whitelist`,
 * `-format_whitelist`, `-safe`, `-allowed_extensions`, `-pattern_type`,
 * `-headers`, `-user_agent`, `-cookies` and other protocol options [the policy
 * sets those]; `-n` [contradicts the injected `-y`]; `-re` [wastes the
 * deadline]; `-init_hw_device`, `-hwaccel*` [devices]; `-f lavfi` inputs
 * [a filtergraph as input, see ffmpeg-formats.ts].
 */

import { MUXER_OPTIONS } from './muxer-options.js'

/** How the word after an option is read, if any. */
export type OptionKind =
  /** Takes no value. */
  | 'flag'
  /** A value that names nothing ffmpeg opens: codecs, numbers, times, maps, metadata. */
  | 'value'
  /** A number of threads, at most MAX_FFMPEG_THREADS. */
  | 'threads'
  /** A filtergraph, checked filter by filter. */
  | 'filtergraph'
  /** A container format, checked against ffmpeg-formats.ts. */
  | 'format'
  /** `-i`: an input, which must be an alias or a file an earlier command wrote. */
  | 'input'
  /** An option of a multi-file muxer (muxer-options.ts), checked with the output it applies to. */
  | 'muxer'

export interface OptionRule {
  kind: OptionKind
  /** Global options apply wherever they appear, so they may also follow the last output. */
  global?: boolean
}

/**
 * Most threads one option may ask for. A command runs beside others on a
 * shared host (local mode) or in a pod with a CPU limit: more threads than
 * cores buy nothing, and thousands of them are a way to exhaust the host.
 * `0` (ffmpeg's automatic choice, about one per core) stays allowed.
 */
export const MAX_FFMPEG_THREADS = 16

// FFmpeg 8 reads `-autorotate` as a flag (5.1 read a value after it: `-autorotate 0`); `-noautorotate` turns it off.
const FLAGS = ['vn', 'an', 'sn', 'dn', 'shortest', 'copyinkf', 'accurate_seek', 'noaccurate_seek', 'autorotate', 'noautorotate']
const GLOBAL_FLAGS = [
  'y', 'nostdin', 'hide_banner', 'stats', 'nostats', 'benchmark', 'copyts', 'start_at_zero', 'ignore_unknown', 'copy_unknown',
]

const VALUES = [
  // timing and selection
  'ss', 'sseof', 't', 'to', 'itsoffset', 'stream_loop', 'map', 'map_metadata', 'map_chapters',
  'frames', 'vframes', 'aframes', 'dframes', 'fs', 'r', 'fpsmax', 'fps_mode', 'enc_time_base',
  'avoid_negative_ts', 'seek_timestamp', 'thread_queue_size', 'probesize', 'analyzeduration',
  'fpsprobesize', 'max_muxing_queue_size', 'muxdelay', 'muxpreload', 'max_interleave_delta', 'fflags',
  // codecs and quality
  'c', 'codec', 'vcodec', 'acodec', 'scodec', 'b', 'ab', 'vb', 'q', 'qscale', 'crf', 'qp', 'preset',
  'tune', 'profile', 'level', 'maxrate', 'minrate', 'bufsize', 'qmin', 'qmax', 'g', 'bf', 'keyint_min',
  'sc_threshold', 'force_key_frames', 'deadline', 'quality', 'speed', 'cpu-used', 'row-mt', 'tile-columns',
  'tile-rows', 'lag-in-frames', 'auto-alt-ref', 'lossless', 'compression_level', 'vbr', 'application',
  'frame_duration', 'cutoff', 'flags', 'bsf', 'strict', 'tag', 'vtag', 'atag', 'timecode',
  // picture and sound
  's', 'aspect', 'pix_fmt', 'sws_flags', 'top', 'field_order', 'color_primaries', 'color_trc', 'colorspace',
  'color_range', 'ar', 'ac', 'sample_fmt', 'channel_layout', 'video_size', 'pixel_format', 'framerate',
  'sample_rate', 'ch_layout',
  // container
  'metadata', 'disposition', 'movflags', 'brand', 'use_editlist', 'write_tmcd', 'id3v2_version',
  'write_id3v1', 'write_xing', 'loop', 'final_delay', 'update', 'start_number',
]
const GLOBAL_VALUES = ['loglevel', 'v', 'vsync', 'copytb']

/** Allowed option name (without `-` and without a `:stream` suffix) → rule. */
export const ALLOWED_OPTIONS: ReadonlyMap<string, OptionRule> = new Map<string, OptionRule>([
  ...FLAGS.map((name) => [name, { kind: 'flag' }] as const),
  ...GLOBAL_FLAGS.map((name) => [name, { kind: 'flag', global: true }] as const),
  ...VALUES.map((name) => [name, { kind: 'value' }] as const),
  ...GLOBAL_VALUES.map((name) => [name, { kind: 'value', global: true }] as const),
  ['threads', { kind: 'threads' }],
  ['filter_threads', { kind: 'threads', global: true }],
  ['filter_complex_threads', { kind: 'threads', global: true }],
  ['i', { kind: 'input' }],
  ['f', { kind: 'format' }],
  ['vf', { kind: 'filtergraph' }],
  ['af', { kind: 'filtergraph' }],
  ['filter', { kind: 'filtergraph' }],
  ['filter_complex', { kind: 'filtergraph', global: true }],
  ['lavfi', { kind: 'filtergraph', global: true }],
  ...[...MUXER_OPTIONS.keys()].map((name) => [name, { kind: 'muxer' }] as const),
])

/** `-name` or `-name:spec`, split; null when the word is not shaped like an option. */
export function splitOptionName(word: string): { name: string; spec: string | null } | null {
  const match = /^-([A-Za-z0-9_-]+)(?::([A-Za-z0-9_:.#-]*))?$/.exec(word)
  if (!match) return null
  return { name: match[1] as string, spec: match[2] ?? null }
}
