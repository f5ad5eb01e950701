/**
 * Every protocol ffkube's ffmpeg build has (scripts/ffmpeg/build-ffmpeg.sh,
 * configured without network protocols), each with why a command cannot use
 * it. ffmpeg opens a name through a protocol when it starts with `proto:` (or
 * is `-`, the pipe); no path the policy passes does (ffmpeg-paths.ts), and
 * every input gets `-protocol_whitelist file` (INPUT_HARDENING), which the
 * nested opens of a demuxer inherit. test/smoke/ffmpeg-build.test.ts reads
 * the binary's `-protocols` and fails on one missing here, so a protocol a new
 * build brings is reviewed before it ships.
 */

const NO_PREFIX = 'needs a `proto:` prefix, which no path the policy passes has, and is not on the inputs\' whitelist'

/** Protocol → why the policy keeps commands from it (or, for `file`, what it is used for). */
export const REVIEWED_PROTOCOLS: ReadonlyMap<string, string> = new Map([
  ['file', 'the one protocol ffmpeg opens: work-dir paths, and the only entry of -protocol_whitelist'],
  ['pipe', '`-` and `pipe:` are refused as paths (standard input and output are not allowed); stdout carries -progress'],
  ['fd', NO_PREFIX],
  ['async', NO_PREFIX],
  ['cache', NO_PREFIX],
  ['concat', `${NO_PREFIX}; the concat demuxer is left out of the demuxers too`],
  ['concatf', NO_PREFIX],
  ['crypto', NO_PREFIX],
  ['data', NO_PREFIX],
  ['subfile', NO_PREFIX],
  ['md5', `${NO_PREFIX}; an output path is a plain filename`],
  ['tee', `${NO_PREFIX}; the tee muxer is left out of the muxers too`],
  ['prompeg', `${NO_PREFIX}; it sends over udp, which this build does not have`],
])
