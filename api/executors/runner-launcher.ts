/**
 * How a local run's runner is started: on a warm worker of the pool
 * (runner-pool.ts), in a new work directory, inside the run's CPU cgroup when
 * it has one (cpu-caps.ts), with its storage destination's credentials beside
 * the spec (never in it).
 *
 * A yt-dlp run's account cookies.txt is written in a directory of its own,
 * `<dataDir>/runner/ytdlp-cookies/<run key>/`: outside every work directory,
 * so no output can be read from it, and alone, so the runner can bind just it
 * into yt-dlp's jail (contracts/ytdlp-cookies.ts).
 */
import { mkdir, rm, writeFile } from 'node:fs/promises'
import { availableParallelism } from 'node:os'
import { join } from 'node:path'
import type { CommandSpec } from '../../contracts/command-spec.js'
import type { DestinationCredentials } from '../../contracts/destination-credentials.js'
import type { LogChunk } from '../../contracts/log-chunks.js'
import type { StatusEvent } from '../../contracts/status-events.js'
import type { Logger } from '../logger.js'
import { capNeeded, CpuCaps, type CpuCap } from './cpu-caps.js'
import type { DestinationCredentialSource, YtdlpCookieSource } from './executor.js'
import { runnerEnvironment, type RunnerSettings } from './runner-environment.js'
import { defaultPoolWorkerMain, RunnerPool, type RunnerProcess } from './runner-pool.js'

export interface RunnerLauncherOptions {
  /** Work directories go under `<dataDir>/work`, the credentials file under `<dataDir>/runner`. */
  dataDir: string
  runner: RunnerSettings
  /** Warm workers kept, and started at once. */
  concurrency: number
  /** The warm runner's program (ServiceParts.poolWorkerMain); runner-image/runner/pool-worker.ts when unset. */
  poolWorkerMain?: string | undefined
  /** A command's storage-destination credentials; none fails its upload as DESTINATION_UPLOAD_FAILED. */
  destinationCredentials?: DestinationCredentialSource | undefined
  /** The account's yt-dlp cookies, for a YTDLP_COMMAND; none: yt-dlp runs without. */
  ytdlpCookies?: YtdlpCookieSource | undefined
  /** Where a worker's status events and log chunks go. */
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
  #pool: RunnerPool | null = null
  #cpuCaps: CpuCaps | null = null

  constructor(private readonly options: RunnerLauncherOptions) {}

  /** Prepares the runners' environment, the CPU caps where the host allows them, and the warm pool. */
  async start(): Promise<void> {
    const { options } = this
    const caps = CpuCaps.detect()
    if (caps instanceof CpuCaps) this.#cpuCaps = caps
    else options.log.warn({ reason: caps.unavailable }, 'vcpu_count is recorded but not enforced in local mode on this host')
    const env = await runnerEnvironment(options.runner, options.dataDir)
    // What a previous start of the service left (it was killed during a download); no run of this start has any yet.
    await rm(join(options.dataDir, 'runner', 'ytdlp-cookies'), { recursive: true, force: true })
    this.#pool = new RunnerPool(options.poolWorkerMain ?? defaultPoolWorkerMain(), env, options.dataDir, options.publish, undefined, options.publishLog)
    this.#pool.prewarm(options.concurrency)
  }

  get started(): boolean {
    return this.#pool !== null
  }

  close(): void {
    this.#pool?.close()
    this.#cpuCaps?.removeLeftovers()
  }

  /** Starts the run's runner in a new, empty work dir; its CPU cap (null: none) is the caller's to release with end(). */
  async launch(spec: CommandSpec, run: LaunchedRun, log: Logger): Promise<{ runner: RunnerProcess; cap: CpuCap | null }> {
    if (!this.#pool) throw new Error('the runner launcher is not started')
    const cap = this.#cpuCap(spec, run, log)
    await rm(run.workDir, { recursive: true, force: true })
    await mkdir(run.workDir, { recursive: true, mode: 0o700 })
    const credentials = spec.storageDestination ? await this.#destinationCredentials(spec, log) : null
    const cookiesFile = await this.#ytdlpCookiesFile(spec, run, log)
    const placement = cap ? { enter: (pid: number) => cap.add(pid), leave: (pid: number) => cap.release(pid) } : undefined
    return { runner: this.#pool.run(spec, run.workDir, credentials, placement, cookiesFile), cap }
  }

  /** After the runner: its cgroup, its work dir (unless the service is stopping: the next start's recovery looks at it) and its cookies go. */
  async end(run: LaunchedRun, cap: CpuCap | null, keepWorkDir: boolean): Promise<void> {
    // The worker left the cgroup already (again is harmless), or never entered it (the pool refused the job).
    cap?.release()
    if (!keepWorkDir) await rm(run.workDir, { recursive: true, force: true }).catch(() => undefined)
    // The runner emptied it already unless it died first.
    await rm(this.#ytdlpCookiesDir(run), { recursive: true, force: true }).catch(() => undefined)
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
      if (cookies === null) return null
      const dir = this.#ytdlpCookiesDir(run)
      await mkdir(dir, { recursive: true, mode: 0o700 })
      await writeFile(join(dir, 'cookies.txt'), cookies, { mode: 0o600 })
      return join(dir, 'cookies.txt')
    } catch (err) {
      // yt-dlp then runs without them; a site that needs them answers SOURCE_LOGIN_REQUIRED or SOURCE_BOT_CHECK.
      log.error({ err, account_id: spec.accountId }, 'could not write the account\'s yt-dlp cookies for this run')
      return null
    }
  }

  /** The run's cookie directory; the run key is reduced to what cannot climb out of it. */
  #ytdlpCookiesDir(run: LaunchedRun): string {
    return join(this.options.dataDir, 'runner', 'ytdlp-cookies', run.key.replace(/[^0-9a-f-]/g, '_'))
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
