/**
 * The fixed yt-dlp argument list. Nothing the user sends becomes an option:
 * the URL comes after `--`, the format is one of the spec's selectors mapped
 * here, and the output template is ours.
 */
import type { FormatSelector } from '../../../contracts/command-spec.js'
import { INPUT_HARDENING } from '../../../contracts/ffmpeg-policy.js'

/**
 * A resolution is a cap: the best format at or below it (`<=?` also accepts
 * formats whose height is unknown, as a direct file link has), and when the
 * source has nothing below the cap, the smallest it has.
 */
function capped(height: number): string {
  return `bv*[height<=?${height}]+ba/b[height<=?${height}]/wv*+ba/w`
}

/** format_selector → yt-dlp `--format`. */
export const FORMAT_BY_SELECTOR: Readonly<Record<FormatSelector, string>> = {
  best: 'bv*+ba/b',
  '2160p': capped(2160),
  '1440p': capped(1440),
  '1080p': capped(1080),
  '720p': capped(720),
  '480p': capped(480),
  '360p': capped(360),
  audio_only: 'ba/b',
  worst: 'wv*+wa/w',
}

/**
 * yt-dlp's post-processors that run ffmpeg on downloaded files. Each gets the
 * same input hardening as a user command, so a "video" whose bytes are an HLS
 * playlist naming local files cannot make the merge read them.
 */
const FFMPEG_POSTPROCESSORS = ['Merger', 'FixupM4a', 'FixupM3u8', 'FixupTimestamp', 'FixupDuration', 'FixupStretched', 'VideoRemuxer', 'VideoConvertor', 'ExtractAudio']

function postprocessorHardening(): string[] {
  return FFMPEG_POSTPROCESSORS.flatMap((name) => ['--ppa', `${name}+ffmpeg_i:${INPUT_HARDENING.join(' ')}`])
}

export interface YtdlpArgsInput {
  url: string
  formatSelector: FormatSelector
  /** Output template relative to the work dir, e.g. `inputs/in_video.%(ext)s`. */
  outputTemplate: string
  maxBytes: number
  ffmpegPath: string
  /**
   * The Node that solves YouTube's JavaScript challenges with yt-dlp's
   * bundled EJS solver (yt-dlp runs it with --permission: no file writes, no
   * child processes). Without a runtime YouTube serves few or no formats.
   */
  jsRuntimePath: string
  socketTimeoutSeconds: number
  /** The runner's guard proxy (guard-proxy.ts): every connection yt-dlp makes goes through it. */
  proxyUrl: string
  /** The account's cookies.txt (contracts/ytdlp-cookies.ts); yt-dlp also writes its jar back there at exit. */
  cookiesFile?: string | null
}

/** Builds yt-dlp's argv (without the program name). */
export function ytdlpArgs(input: YtdlpArgsInput): string[] {
  return [
    // No configuration, plugins, cookies, cache, archive or exec hooks from anywhere on the machine;
    // cookies only from the account's own file, when it stored one.
    '--ignore-config', '--no-plugin-dirs', ...(input.cookiesFile ? ['--cookies', input.cookiesFile] : ['--no-cookies']), '--no-cookies-from-browser', '--no-cache-dir',
    '--no-exec', '--no-batch-file', '--no-playlist', '--no-write-info-json', '--no-write-playlist-metafiles',
    '--no-mtime', '--no-progress', '--color', 'never', '--restrict-filenames',
    '--max-filesize', String(input.maxBytes),
    '--socket-timeout', String(input.socketTimeoutSeconds),
    '--proxy', input.proxyUrl,
    // yt-dlp's own downloader honours --proxy; handing a stream to an external ffmpeg would not for every protocol.
    '--downloader', 'native',
    '--format', FORMAT_BY_SELECTOR[input.formatSelector],
    '--merge-output-format', 'mp4/mkv',
    '--ffmpeg-location', input.ffmpegPath,
    '--js-runtimes', `node:${input.jsRuntimePath}`,
    ...postprocessorHardening(),
    '--output', input.outputTemplate,
    '--print', 'after_move:filepath',
    '--',
    input.url,
  ]
}
