import { setTimeout as delay } from 'node:timers/promises'
import { createFfkubeClient, type FfkubeClient } from '../client/index.js'
import { checkServiceUrl, loadConfig, type ResolvedConfig } from './config.js'
import { UsageError } from './errors.js'

/** What a subcommand needs from the process: output, configuration, a client, time and Ctrl-C. */
export interface CliContext {
  env: NodeJS.ProcessEnv
  cwd: string
  /** Results: what a script reads. */
  out(text: string): void
  /** Progress, notes and errors. */
  err(text: string): void
  stderr: NodeJS.WriteStream
  /** Aborted on Ctrl-C. */
  signal: AbortSignal
  sleep(ms: number, signal?: AbortSignal): Promise<void>
  config(): Promise<ResolvedConfig>
  /** The client for the configured service; a usage error when the URL or key is missing. */
  connect(): Promise<Connection>
  /** The service URL once connect() found it, for error messages. */
  baseUrl: string | null
}

export interface Connection {
  client: FfkubeClient
  baseUrl: string
  apiKey: string
}

/** The context of a real process. */
export function processContext(signal: AbortSignal): CliContext {
  let config: Promise<ResolvedConfig> | null = null
  const context: CliContext = {
    env: process.env,
    cwd: process.cwd(),
    out: (text) => process.stdout.write(text),
    err: (text) => process.stderr.write(text),
    stderr: process.stderr,
    signal,
    sleep: (ms, sleepSignal) => delay(ms, undefined, sleepSignal ? { signal: sleepSignal } : {}),
    config: () => (config ??= loadConfig(process.env)),
    baseUrl: null,
    async connect() {
      const resolved = await context.config()
      if (!resolved.url) throw new UsageError(`no service URL: set FFKUBE_URL (e.g. http://127.0.0.1:8080) or run \`ffkube config set url <url>\` (${resolved.path})`)
      if (!resolved.apiKey) throw new UsageError('no API key: set FFKUBE_API_KEY or run `ffkube config set api-key <key>` (`npm start` prints one)')
      const baseUrl = checkServiceUrl(resolved.url)
      context.baseUrl = baseUrl
      return { client: createFfkubeClient({ baseUrl, apiKey: resolved.apiKey }), baseUrl, apiKey: resolved.apiKey }
    },
  }
  return context
}
