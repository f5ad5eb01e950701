/**
 * Phase 1 (fetch) of a YTDLP_COMMAND: each URL independently through yt-dlp
 * with the fixed argument list, after the URL guard has checked its host.
 */
import { mkdir, readdir, rm } from 'node:fs/promises'
import { dirname, isAbsolute, join, relative } from 'node:path'
import type { FormatSelector } from '../../../contracts/command-spec.js'
import type { FailedFile } from '../../../contracts/status-events.js'
import { assertUrlAllowed, UrlGuardError, type Resolver } from '../../../contracts/url-guard-fetch.js'
import type { UrlGuardOptions } from '../../../contracts/url-guard.js'
import type { SandboxHost } from '../../../contracts/sandbox.js'
import { runTool } from '../../../contracts/tool-process.js'
import { startGuardProxy, type GuardProxy } from './guard-proxy.js'
import { lastLines } from '../stderr-tail.js'
import type { ToolLog } from '../report/log-shipper.js'
import { ytdlpArgs } from './ytdlp-args.js'
import { classifyYtdlpFailure, YTDLP_FAILURE_HINTS } from './ytdlp-failures.js'

export interface YtdlpDownloadOptions {
  ytdlpPath: string
  ffmpegPath: string
  /** yt-dlp's JavaScript runtime: the Node this runner runs on. */
  jsRuntimePath: string
  workDir: string
  formatSelector: FormatSelector
  maxBytes: number
  timeoutMs: number
  guard: UrlGuardOptions & { resolve?: Resolver }
  /**
   * yt-dlp's jail. It keeps the host's network: the guard proxy it must use
   * listens on the runner's loopback, which a fresh network namespace cannot
   * reach (README, "Sandbox"). null: none (a runner pod).
   */
  sandbox?: SandboxHost | null
  /** yt-dlp's stderr, one labelled step per URL, for the command's log. */
  log?: ToolLog
  /**
   * The account's cookies.txt, alone in its directory (contracts/ytdlp-cookies.ts):
   * that directory is bound into yt-dlp's jail, and emptied when the downloads end.
   */
  cookiesFile?: string | null
}

export interface DownloadOutcome {
  /** alias → work-dir path of the downloaded file. */
  downloaded: Record<string, string>
  failed: Record<string, FailedFile>
}

/** Downloads each URL in turn; a failure is recorded, not thrown. */
export async function downloadAll(urls: Record<string, string>, options: YtdlpDownloadOptions): Promise<DownloadOutcome> {
  await mkdir(join(options.workDir, 'inputs'), { recursive: true })
  const outcome: DownloadOutcome = { downloaded: {}, failed: {} }
  const proxy = await startGuardProxy(options.guard)
  try {
    for (const [alias, url] of Object.entries(urls)) {
      const result = await downloadOne(alias, url, options, proxy)
      if ('path' in result) outcome.downloaded[alias] = result.path
      else outcome.failed[alias] = result
    }
  } finally {
    await proxy.close()
    // Before anything else runs: the user's ffmpeg comes after this phase, and must find no cookie anywhere.
    if (options.cookiesFile) await emptyDirectory(dirname(options.cookiesFile))
  }
  return outcome
}

/**
 * Removes what the cookie directory holds (the file, and whatever yt-dlp wrote
 * beside it), keeping the directory: in a pod it may be a mount point.
 */
async function emptyDirectory(dir: string): Promise<void> {
  const entries = await readdir(dir).catch(() => [])
  await Promise.all(entries.map((entry) => rm(join(dir, entry), { recursive: true, force: true })))
}

async function downloadOne(alias: string, url: string, options: YtdlpDownloadOptions, proxy: GuardProxy): Promise<{ path: string } | FailedFile> {
  try {
    await assertUrlAllowed(url, options.guard)
  } catch (error) {
    if (!(error instanceof UrlGuardError)) throw error
    return { url, error_status: `INPUT_${error.code}`, error_message: `input ${alias}: ${error.message}` }
  }
  const args = ytdlpArgs({
    url,
    formatSelector: options.formatSelector,
    outputTemplate: `inputs/${alias}.%(ext)s`,
    maxBytes: options.maxBytes,
    ffmpegPath: options.ffmpegPath,
    jsRuntimePath: options.jsRuntimePath,
    socketTimeoutSeconds: 30,
    proxyUrl: proxy.url,
    cookiesFile: options.cookiesFile ?? null,
  })
  proxy.takeRefusals()
  options.log?.step(`yt-dlp: ${alias}`)
  const run = await runTool(options.ytdlpPath, args, {
    cwd: options.workDir,
    timeoutMs: options.timeoutMs,
    sandbox: { host: options.sandbox ?? null, network: 'host', ...(options.cookiesFile ? { binds: [dirname(options.cookiesFile)] } : {}) },
    ...(options.log ? { onStderr: (chunk: string) => options.log?.write(chunk.split(proxy.url).join('<guard proxy>')) } : {}),
  })
  const refused = proxy.takeRefusals()
  const printed = run.stdout.trim().split('\n').filter(Boolean).at(-1)
  if (run.code === 0 && printed) {
    const path = isAbsolute(printed) ? relative(options.workDir, printed) : printed
    if (!path.startsWith('..')) return { path }
  }
  if (refused.length > 0) {
    // A redirect or a media URL inside the page pointed into the network: that, not yt-dlp's 403, is the reason.
    return { url, error_status: 'INPUT_FORBIDDEN_ADDRESS', error_message: `input ${alias}: ${refused[0]}` }
  }
  if (run.timedOut) return { url, error_status: 'DOWNLOAD_FAILED', error_message: `input ${alias}: the download did not finish in time` }
  // yt-dlp exits 0 and prints nothing when --max-filesize skipped the file.
  if (run.code === 0) return { url, error_status: 'DOWNLOAD_TOO_LARGE', error_message: `input ${alias}: larger than ${options.maxBytes} bytes` }
  const status = classifyYtdlpFailure(run.stderr)
  return { url, error_status: status, error_message: `input ${alias}: ${YTDLP_FAILURE_HINTS[status]}: ${lastLines(run.stderr, 2, 400)}` }
}
