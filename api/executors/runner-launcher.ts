/**
 * How a local run's runner is started: a warm worker of the pool
 * (runner-pool.ts) or a fresh process (runner-process.ts), in a new work
 * directory, inside the run's CPU cgroup when it has one (cpu-caps.ts), with
 * its storage destination's credentials beside the spec (never in it).
 */
import { mkdir, rm } from 'node:fs/promises'
import { availableParallelism } from 'node:os'
import type { CommandSpec } from '../../contracts/command-spec.js'
import type { DestinationCredentials } from '../../contracts/destination-credentials.js'
import type { LogChunk } from '../../contracts/log-chunks.js'
import type { StatusEvent } from '../../contracts/status-events.js'
import type { Logger } from '../logger.js'
import { capNeeded, CpuCaps, type CpuCap } from './cpu-caps.js'
import { removeDestinationCredentials, withDestinationCredentials } from './destination-credentials-file.js'
import type { DestinationCredentialSource, YtdlpCookieSource } from './executor.js'
import { runnerEnvironment, type RunnerSettings } from './runner-environment.js'
import { defaultPoolWorkerMain, RunnerPool } from './runner-pool.js'
import { defaultRunnerMain, startRunner, type RunnerProcess } from './runner-process.js'
import { removeLeftoverYtdlpCookies, removeYtdlpCookies, writeYtdlpCookies } from './ytdlp-cookies-file.js'
import { YTDLP_COOKIES_FILE_ENV } from '../../contracts/ytdlp-cookies.js'

export interface RunnerLauncherOptions {
  /** Work directories go under `<dataDir>/work`, the credentials file under `<dataDir>/runner`. */
  dataDir: string
  runner: RunnerSettings
  /** Warm workers kept, and started at once. */
  concurrency: number
  /** Warm runners instead of one fresh process per command (same code and sandbox, minus ~300 ms of start-up); default true. */
  warmPool?: boolean | undefined
  runnerMain?: string | undefined
  /** The warm runner's program (ServiceParts.poolWorkerMain); runner-image/runner/pool-worker.ts when unset. */
  poolWorkerMain?: string | undefined
  /** Cap each run's CPU at its vcpu_count where the host allows it; default true. */
  cpuCaps?: boolean | undefined
  /** A command's storage-destination credentials; none fails its upload as DESTINATION_UPLOAD_FAILED. */
  destinationCredentials?: DestinationCredentialSource | undefined
  /** The account's yt-dlp cookies, for a YTDLP_COMMAND; none: yt-dlp runs without. */
  ytdlpCookies?: YtdlpCookieSource | undefined
  /** Where a warm worker's status events and log chunks go (a fresh runner publishes its own). */
  publish: (event: StatusEvent) => Promise<void>
  publishLog: (chunk: LogChunk) => Promise<void>
  log: Logger
}

/** A run as the launcher sees it: its key (command and attempt) and its work dir. */
export interface LaunchedRun {
  key: string
  workDir: string
}

export class RunnerLauncher {
  #env: NodeJS.ProcessEnv | null = null
  #pool: RunnerPool | null = null
  #cpuCaps: CpuCaps | null = null

  constructor(private readonly options: RunnerLauncherOptions) {}

  /** Prepares the runners' environment and, unless turned off, the CPU caps and the warm pool. */
  async start(): Promise<void> {
    const { options } = this
    const caps = options.cpuCaps === false ? { unavailable: 'turned off (cpuCaps: false)' } : CpuCaps.detect()
    if (caps instanceof CpuCaps) this.#cpuCaps = caps
    else options.log.warn({ reason: caps.unavailable }, 'vcpu_count is recorded but not enforced in local mode on this host')
    this.#env = await runnerEnvironment(options.runner, options.dataDir)
    await removeLeftoverYtdlpCookies(options.dataDir)
    if (options.warmPool ?? true) {
      this.#pool = new RunnerPool(options.poolWorkerMain ?? defaultPoolWorkerMain(), this.#env, options.dataDir, options.publish, undefined, options.publishLog)
      this.#pool.prewarm(options.concurrency)
    }
  }

  get started(): boolean {
    return this.#env !== null
  }

  /** A fresh runner (not a pooled one) is the run's own process: its pid is worth recording for a later start's cleanup. */
  get pooled(): boolean {
    return this.#pool !== null
  }

  close(): void {
    this.#pool?.close()
    this.#cpuCaps?.removeLeftovers()
  }

  /** Starts the run's runner in a new, empty work dir; its CPU cap (null: none) is the caller's to release with end(). */
  async launch(spec: CommandSpec, run: LaunchedRun, log: Logger): Promise<{ runner: RunnerProcess; cap: CpuCap | null }> {
    const cap = this.#cpuCap(spec, run, log)
    await rm(run.workDir, { recursive: true, force: true })
    await mkdir(run.workDir, { recursive: true, mode: 0o700 })
    const credentials = spec.storageDestination ? await this.#destinationCredentials(spec, log) : null
    const cookiesFile = await this.#ytdlpCookiesFile(spec, run, log)
    const placement = cap ? { enter: (pid: number) => cap.add(pid), leave: (pid: number) => cap.release(pid) } : undefined
    const runner = this.#pool
      ? this.#pool.run(spec, run.workDir, credentials, placement, cookiesFile)
      : startRunner(this.options.runnerMain ?? defaultRunnerMain(), spec, run.workDir, {
          ...(await withDestinationCredentials(this.#env as NodeJS.ProcessEnv, this.options.dataDir, run.key, credentials)),
          ...(cookiesFile ? { [YTDLP_COOKIES_FILE_ENV]: cookiesFile } : {}),
        })
    // A fresh runner is placed as it starts, before node has loaded the runner (let alone started a tool).
    if (cap && !this.#pool) cap.add(runner.pid)
    return { runner, cap }
  }

  /** After the runner: its cgroup, its work dir (unless the service is stopping: the next start's recovery looks at it) and its credentials file go. */
  async end(run: LaunchedRun, cap: CpuCap | null, keepWorkDir: boolean): Promise<void> {
    // A fresh runner's cgroup is empty once it exited; a pooled worker left it already (again is harmless),
    // or never entered it (the pool refused the job).
    cap?.release()
    if (!keepWorkDir) await rm(run.workDir, { recursive: true, force: true }).catch(() => undefined)
    await removeDestinationCredentials(this.options.dataDir, run.key).catch(() => undefined)
    await removeYtdlpCookies(this.options.dataDir, run.key).catch(() => undefined)
  }

  /**
   * The run's CPU cgroup, when it has a vcpu_count below this host's cores and this host lets us cap it;
   * null otherwise: a vcpu_count of every core or more caps nothing here.
   */
  #cpuCap(spec: CommandSpec, run: LaunchedRun, log: Logger): CpuCap | null {
    if (!spec.limits || !this.#cpuCaps || !capNeeded(spec.limits.vcpuMillis, availableParallelism())) return null
    try {
      return this.#cpuCaps.create(run.key, spec.limits.vcpuMillis)
    } catch (err) {
      // Runs uncapped rather than not at all; said on its log line.
      log.warn({ err }, 'could not create the CPU cgroup of this run: vcpu_count is not enforced for it')
      return null
    }
  }

  /** A yt-dlp command's cookies.txt, written for this run when its account stored cookies; null otherwise. */
  async #ytdlpCookiesFile(spec: CommandSpec, run: LaunchedRun, log: Logger): Promise<string | null> {
    if (spec.commandType !== 'YTDLP_COMMAND' || !this.options.ytdlpCookies) return null
    try {
      const cookies = await this.options.ytdlpCookies(spec)
      return cookies === null ? null : await writeYtdlpCookies(this.options.dataDir, run.key, cookies)
    } catch (err) {
      // yt-dlp then runs without them; a site that needs them answers SOURCE_LOGIN_REQUIRED or SOURCE_BOT_CHECK.
      log.error({ err, account_id: spec.accountId }, 'could not write the account\'s yt-dlp cookies for this run')
      return null
    }
  }

  async #destinationCredentials(spec: CommandSpec, log: Logger): Promise<DestinationCredentials | null> {
    try {
      return (await this.options.destinationCredentials?.(spec)) ?? null
    } catch (err) {
      // The runner then fails the upload as DESTINATION_UPLOAD_FAILED; the command still ends.
      log.error({ err, storage_destination_id: spec.storageDestinationId }, 'could not open the storage destination credentials')
      return null
    }
  }
}
