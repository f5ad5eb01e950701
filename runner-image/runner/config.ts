import { MANAGED_OUTPUT_PREFIX } from '../../contracts/object-keys.js'
import { parseSandboxHost, SANDBOX_ENV, type SandboxHost } from '../../contracts/sandbox.js'
import { YTDLP_COOKIES_DIR_ENV, YTDLP_COOKIES_FILE_ENV, YTDLP_COOKIES_SOURCE_ENV } from '../../contracts/ytdlp-cookies.js'
import { PROGRESS_INTERVAL_MS } from './report/progress-throttle.js'

/**
 * The runner's configuration, from its environment, read in one place. Storage
 * credentials are not part of it: phase 3 reads them itself, when it starts
 * (upload/upload-target.ts).
 */

export interface RunnerConfig {
  allowPrivateNetworks: boolean
  inputMaxBytes: number
  inputTimeoutMs: number
  ffmpegTimeoutMs: number
  downloadMaxBytes: number
  downloadTimeoutMs: number
  ffmpegPath: string
  ffprobePath: string
  ytdlpPath: string
  /**
   * The account's cookies.txt for yt-dlp, alone in a directory of its own
   * outside the work dir (contracts/ytdlp-cookies.ts); null: yt-dlp gets none.
   * A path, not a secret: the fetch phase reads nothing from it but hands it to yt-dlp.
   */
  ytdlpCookiesFile: string | null
  /** In a pod's upload container: the mounted cookies Secret file to hand over (absent file: none stored). */
  ytdlpCookiesSource: string | null
  /** In a pod's ffmpeg container: the directory of its own where the fetch writes what it was handed. */
  ytdlpCookiesDir: string | null
  /** The jail of every tool (FFKUBE_SANDBOX, set by the local executor); null in a runner pod, whose pod is the jail. */
  sandbox: SandboxHost | null
  /** The least time between two PROCESSING events (progress-throttle.ts); 0 sends each at once. */
  progressIntervalMs: number
  /** `stdout`: JSON lines (local executor); `nats`: JetStream at natsUrl. */
  reporter: 'stdout' | 'nats'
  natsUrl: string | null
  storage: { endpoint: string | null; region: string; bucket: string; prefix: string; forcePathStyle: boolean }
}

export class RunnerConfigError extends Error {
  override readonly name = 'RunnerConfigError'
}

function flag(env: NodeJS.ProcessEnv, name: string, fallback: boolean): boolean {
  const value = env[name]
  if (value === undefined || value === '') return fallback
  if (['1', 'true', 'yes'].includes(value.toLowerCase())) return true
  if (['0', 'false', 'no'].includes(value.toLowerCase())) return false
  throw new RunnerConfigError(`${name} must be true or false, got "${value}"`)
}

function positive(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const value = env[name]
  if (value === undefined || value === '') return fallback
  const parsed = Number(value)
  if (!Number.isFinite(parsed) || parsed <= 0) throw new RunnerConfigError(`${name} must be a positive number, got "${value}"`)
  return parsed
}

function nonNegative(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const value = env[name]
  if (value === undefined || value === '') return fallback
  const parsed = Number(value)
  if (!Number.isFinite(parsed) || parsed < 0) throw new RunnerConfigError(`${name} must be a number of 0 or more, got "${value}"`)
  return parsed
}

const GIB = 1024 ** 3

function sandboxHost(env: NodeJS.ProcessEnv): SandboxHost | null {
  try {
    return parseSandboxHost(env[SANDBOX_ENV])
  } catch (error) {
    throw new RunnerConfigError(error instanceof Error ? error.message : String(error))
  }
}

export function readRunnerConfig(env: NodeJS.ProcessEnv = process.env): RunnerConfig {
  const reporter = env.FFKUBE_STATUS_REPORTER ?? 'stdout'
  if (reporter !== 'stdout' && reporter !== 'nats') throw new RunnerConfigError(`FFKUBE_STATUS_REPORTER must be stdout or nats, got "${reporter}"`)
  const natsUrl = env.NATS_URL ?? null
  if (reporter === 'nats' && !natsUrl) throw new RunnerConfigError('NATS_URL is required when FFKUBE_STATUS_REPORTER=nats')
  return {
    allowPrivateNetworks: flag(env, 'ALLOW_PRIVATE_NETWORKS', false),
    inputMaxBytes: positive(env, 'FFKUBE_INPUT_MAX_BYTES', 5 * GIB),
    inputTimeoutMs: positive(env, 'FFKUBE_INPUT_TIMEOUT_SECONDS', 600) * 1000,
    ffmpegTimeoutMs: positive(env, 'FFKUBE_FFMPEG_TIMEOUT_SECONDS', 3600) * 1000,
    downloadMaxBytes: positive(env, 'FFKUBE_DOWNLOAD_MAX_BYTES', 5 * GIB),
    downloadTimeoutMs: positive(env, 'FFKUBE_DOWNLOAD_TIMEOUT_SECONDS', 1800) * 1000,
    ffmpegPath: env.FFMPEG_PATH ?? 'ffmpeg',
    ffprobePath: env.FFPROBE_PATH ?? 'ffprobe',
    ytdlpPath: env.YTDLP_PATH ?? 'yt-dlp',
    ytdlpCookiesFile: env[YTDLP_COOKIES_FILE_ENV] || null,
    ytdlpCookiesSource: env[YTDLP_COOKIES_SOURCE_ENV] || null,
    ytdlpCookiesDir: env[YTDLP_COOKIES_DIR_ENV] || null,
    sandbox: sandboxHost(env),
    progressIntervalMs: nonNegative(env, 'FFKUBE_PROGRESS_INTERVAL_MS', PROGRESS_INTERVAL_MS),
    reporter,
    natsUrl,
    storage: {
      endpoint: env.S3_ENDPOINT || null,
      region: env.S3_REGION ?? 'us-east-1',
      bucket: env.S3_BUCKET ?? 'ffkube',
      prefix: MANAGED_OUTPUT_PREFIX,
      forcePathStyle: flag(env, 'S3_FORCE_PATH_STYLE', true),
    },
  }
}
