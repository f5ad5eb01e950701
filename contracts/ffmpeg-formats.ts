/**
 * The container formats a command may name with `-f`, and the demuxers ffmpeg
 * may pick for an input. Left out on purpose: every format that opens other
 * files or the network by itself — demuxers `concat`, `hls`, `dash`, `sdp`,
 * `rtsp`, `lavfi`, `image2` patterns; muxers `fifo`, `webm_chunk`,
 * `smoothstreaming` — and pipe formats, because the runner's stdout carries
 * `-progress`. The multi-file muxers `hls`, `dash`, `segment`/`ssegment`/
 * `stream_segment` and `tee` are allowed with the rules of policy-outputs.ts:
 * only into a declared output's own folder, with every file name they take checked.
 */

/** Muxers a command may force with `-f` before an output. */
export const ALLOWED_MUXERS: ReadonlySet<string> = new Set([
  'mp4', 'mov', 'ipod', '3gp', 'm4v', 'matroska', 'webm', 'avi', 'flv', 'mpegts', 'mpeg', 'vob', 'mxf',
  'mp3', 'mp2', 'adts', 'ac3', 'eac3', 'flac', 'ogg', 'oga', 'opus', 'wav', 'w64', 'aiff', 'caf', 'wv',
  'gif', 'apng', 'webp', 'image2', 'mjpeg', 'null',
  'srt', 'webvtt', 'ass',
  'h264', 'hevc', 'rawvideo', 's16le', 'f32le', 'u8',
  'ffmetadata',
  'hls', 'dash', 'segment', 'ssegment', 'stream_segment', 'tee',
])

/**
 * Demuxers ffmpeg may use for an input, injected as `-format_whitelist` before
 * every `-i` so that even a probed (not forced) format is held to it: an input
 * whose bytes are an HLS playlist or a concat list then fails to open instead
 * of reading the files it names. ffmpeg matches any name of a multi-name
 * demuxer (`mov` matches `mov,mp4,m4a,3gp,3g2,mj2`).
 */
export const ALLOWED_DEMUXERS: readonly string[] = [
  'mov', 'matroska', 'avi', 'flv', 'mpegts', 'mpeg', 'mpegvideo', 'mxf', 'asf', 'dv', 'ivf', 'nut', 'yuv4mpegpipe',
  'mp3', 'aac', 'ac3', 'eac3', 'dts', 'truehd', 'flac', 'ogg', 'wav', 'w64', 'aiff', 'caf', 'wv', 'amr',
  'gif', 'apng', 'mjpeg', 'image2', 'png_pipe', 'jpeg_pipe', 'webp_pipe', 'bmp_pipe', 'tiff_pipe', 'gif_pipe',
  'h264', 'hevc', 'm4v', 'rawvideo', 's16le', 'f32le', 'u8',
  'srt', 'webvtt', 'ass',
]

/** Formats a command may force with `-f` before an input. */
export const ALLOWED_INPUT_FORMATS: ReadonlySet<string> = new Set(ALLOWED_DEMUXERS)

/** The `-format_whitelist` value the policy injects before every `-i`. */
export const DEMUXER_WHITELIST = ALLOWED_DEMUXERS.join(',')
