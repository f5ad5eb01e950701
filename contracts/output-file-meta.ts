/**
 * Media metadata of a file, as the spec's OutputFileMeta and StoredFileResponse
 * report it, computed from `ffprobe -show_format -show_streams -of json`. Pure:
 * the runner (outputs) and the API (store-file, upload) both call it.
 */

/** The media fields of OutputFileMeta / StoredFileResponse. */
export interface MediaMeta {
  size_mbytes: number | null
  duration: number | null
  file_type: 'video' | 'audio' | 'image' | 'subtitle' | 'other' | null
  file_format: string | null
  codec: string | null
  pixel_format: string | null
  mime_type: string | null
  width: number | null
  height: number | null
  frame_rate: number | null
  bitrate_video_kb: number | null
  bitrate_audio_kb: number | null
  sample_rate: number | null
  channels: number | null
}

/** The parts of ffprobe's JSON this module reads. */
export interface FfprobeStream {
  codec_type?: string
  codec_name?: string
  pix_fmt?: string
  width?: number
  height?: number
  avg_frame_rate?: string
  r_frame_rate?: string
  bit_rate?: string
  sample_rate?: string
  channels?: number
  nb_frames?: string
  disposition?: { attached_pic?: number }
  tags?: Record<string, string>
}
export interface FfprobeOutput {
  streams?: FfprobeStream[]
  format?: { format_name?: string; duration?: string; size?: string; bit_rate?: string }
}

/** Megabytes are binary (MiB): 1 size_mbytes = 1,048,576 bytes. */
const BYTES_PER_MB = 1024 * 1024

const IMAGE_FORMATS = new Set(['image2', 'png_pipe', 'jpeg_pipe', 'webp_pipe', 'bmp_pipe', 'tiff_pipe', 'gif_pipe', 'mjpeg'])

const MIME_BY_EXTENSION: Record<string, string> = {
  mp4: 'video/mp4', m4v: 'video/x-m4v', mov: 'video/quicktime', mkv: 'video/x-matroska', webm: 'video/webm',
  avi: 'video/x-msvideo', flv: 'video/x-flv', ts: 'video/mp2t', mpg: 'video/mpeg', mpeg: 'video/mpeg', '3gp': 'video/3gpp',
  mp3: 'audio/mpeg', m4a: 'audio/mp4', aac: 'audio/aac', wav: 'audio/wav', flac: 'audio/flac', ogg: 'audio/ogg',
  oga: 'audio/ogg', opus: 'audio/opus', weba: 'audio/webm',
  gif: 'image/gif', png: 'image/png', jpg: 'image/jpeg', jpeg: 'image/jpeg', webp: 'image/webp', bmp: 'image/bmp',
  tif: 'image/tiff', tiff: 'image/tiff', apng: 'image/apng',
  srt: 'application/x-subrip', vtt: 'text/vtt', ass: 'text/x-ssa',
  // Playlists and segments of multi-file outputs.
  m3u8: 'application/vnd.apple.mpegurl', mpd: 'application/dash+xml', m4s: 'video/iso.segment',
}

const FALLBACK_MIME: Record<string, string> = {
  video: 'video/mp4', audio: 'audio/mpeg', image: 'image/png', subtitle: 'text/plain', other: 'application/octet-stream',
}

/** The MIME type a filename's extension implies, or null. */
export function mimeTypeForFilename(filename: string): string | null {
  return MIME_BY_EXTENSION[extensionOf(filename)] ?? null
}

function num(value: string | number | undefined): number | null {
  if (value === undefined || value === 'N/A' || value === '') return null
  const parsed = Number(value)
  return Number.isFinite(parsed) ? parsed : null
}

function round(value: number | null, digits: number): number | null {
  if (value === null) return null
  const factor = 10 ** digits
  return Math.round(value * factor) / factor
}

/** `30000/1001` → 29.97; `0/0` → null. */
export function parseFrameRate(rate: string | undefined): number | null {
  if (!rate) return null
  const [n, d] = rate.split('/').map(Number)
  if (n === undefined || !Number.isFinite(n) || n <= 0) return null
  const value = d === undefined ? n : d > 0 ? n / d : null
  return round(value, 3)
}

function extensionOf(filename: string): string {
  const match = /\.([A-Za-z0-9]+)$/.exec(filename)
  return match ? (match[1] as string).toLowerCase() : ''
}

/** Bits per second of a stream, falling back to Matroska's `BPS` tag. */
function streamBitrateKb(stream: FfprobeStream | undefined): number | null {
  if (!stream) return null
  const bps = num(stream.bit_rate) ?? num(stream.tags?.BPS) ?? num(stream.tags?.['BPS-eng'])
  return bps === null ? null : Math.round(bps / 1000)
}

/**
 * When a container (Matroska, WebM) keeps no per-stream bitrate and the file
 * has only this one kind of media, the container's bitrate is that stream's.
 */
function soleStreamBitrateKb(stream: FfprobeStream | undefined, other: FfprobeStream | undefined, formatBitRate: string | undefined): number | null {
  if (!stream || other) return null
  const bps = num(formatBitRate)
  return bps === null ? null : Math.round(bps / 1000)
}

/**
 * Maps ffprobe's JSON for `filename` (whose byte size ffprobe may not report
 * for every format, hence `sizeBytes`) to the spec's media fields.
 */
export function mediaMetaFromProbe(probe: FfprobeOutput, filename: string, sizeBytes: number): MediaMeta {
  const streams = probe.streams ?? []
  const format = probe.format ?? {}
  const formatNames = (format.format_name ?? '').split(',').filter(Boolean)
  const video = streams.find((s) => s.codec_type === 'video' && s.disposition?.attached_pic !== 1)
  const audio = streams.find((s) => s.codec_type === 'audio')
  const subtitle = streams.find((s) => s.codec_type === 'subtitle')
  const extension = extensionOf(filename)
  const frames = num(video?.nb_frames)
  const isImage =
    video !== undefined &&
    audio === undefined &&
    (formatNames.some((name) => IMAGE_FORMATS.has(name)) || (formatNames.includes('gif') && (frames === null || frames <= 1)))
  const fileType: MediaMeta['file_type'] = isImage
    ? 'image'
    : video
      ? 'video'
      : audio
        ? 'audio'
        : subtitle
          ? 'subtitle'
          : streams.length > 0 || formatNames.length > 0
            ? 'other'
            : null
  const primary = video ?? audio ?? subtitle
  // `mov,mp4,…` names every container the demuxer reads: the file's extension says which one it is.
  const fileFormat = formatNames.includes(extension) ? extension : (formatNames[0]?.replace(/_pipe$/, '') ?? null)
  const duration = isImage ? null : round(num(format.duration), 3)
  return {
    size_mbytes: round(sizeBytes / BYTES_PER_MB, 6),
    duration,
    file_type: fileType,
    file_format: fileFormat,
    codec: primary?.codec_name ?? null,
    pixel_format: video?.pix_fmt ?? null,
    mime_type: MIME_BY_EXTENSION[extension] ?? (fileType ? (FALLBACK_MIME[fileType] ?? null) : null),
    width: video?.width ?? null,
    height: video?.height ?? null,
    frame_rate: isImage ? null : (parseFrameRate(video?.avg_frame_rate) ?? parseFrameRate(video?.r_frame_rate)),
    bitrate_video_kb: isImage ? null : (streamBitrateKb(video) ?? soleStreamBitrateKb(video, audio, format.bit_rate)),
    bitrate_audio_kb: streamBitrateKb(audio) ?? soleStreamBitrateKb(audio, video, format.bit_rate),
    sample_rate: num(audio?.sample_rate),
    channels: audio?.channels ?? null,
  }
}
