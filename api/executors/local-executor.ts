/**
 * EXECUTOR=local: runs each command's runner as a child process on this host,
 * at most `concurrency` at once, in a fresh work directory under the data dir
 * that is removed afterwards. The runner reports over NATS JetStream, as in
 * Kubernetes mode; this executor only publishes a FAILED event itself when the
 * runner could not (it crashed, overran its deadline, or died with a previous
 * process of this service).
 *
 * Idempotent: a run starts with a conditional update of the command record
 * (CommandRepository#startRun, "no run yet"), so a second execute of the same
 * command finds the run recorded and does nothing. A restart of the service
 * that interrupts a run gives it one more start, again a conditional update
 * ("still the interrupted start's"), so two starts of the service cannot both
 * take it over.
 */
import { randomUUID } from 'node:crypto'
import { readFile, mkdir, rm, writeFile } from 'node:fs/promises'
import { availableParallelism } from 'node:os'
import { join } from 'node:path'
import type { JetStreamClient, NatsConnection } from 'nats'
import type { CommandSpec } from '../../contracts/command-spec.js'
import { isTerminalStatus } from '../../contracts/command-types.js'
import type { DestinationCredentials } from '../../contracts/destination-credentials.js'
import { ensureStream, LOG_STREAM_DEFINITION, STATUS_STREAM_DEFINITION } from '../../contracts/nats-streams.js'
import { publishLogChunk } from '../../contracts/log-publisher.js'
import { SANDBOX_ENV, type SandboxHost } from '../../contracts/sandbox.js'
import { failedEvent, type StatusEvent } from '../../contracts/status-events.js'
import { publishStatusEvent } from '../../contracts/status-publisher.js'
import { systemClock, type Clock } from '../clock.js'
import { toCommandSpec } from '../commands/command-document.js'
import type { CommandRepository, RunStart } from '../commands/command-repository.js'
import type { Logger } from '../logger.js'
import { removeDestinationCredentials, withDestinationCredentials } from './destination-credentials-file.js'
import type { DestinationCredentialSource, Executor } from './executor.js'
import { defaultRunnerMain, startRunner, type RunnerProcess } from './runner-process.js'
import { defaultPoolWorkerMain, RunnerPool } from './runner-pool.js'
import { capNeeded, CpuCaps, type CpuCap } from './cpu-caps.js'
import { Slots } from './slots.js'
import { watchWorkDir, workDirLimitMessage } from './work-dir-watch.js'

/** For executors built without config (tests): api/config.ts's defaults of COMMAND_DEADLINE_SECONDS and COMMAND_WORK_DIR_MAX_BYTES. */
const DEFAULT_DEADLINE_MS = 900_000
const DEFAULT_WORK_DIR_MAX_BYTES = 8 * 1024 ** 3

/** How often a command may start: once, and once more after a restart of this service interrupted it. */
const MAX_ATTEMPTS = 2

/** One start of a command's runner, owned by this start of the service (its boot id). */
interface Run extends RunStart {
  commandId: string
  /** Names the run's credentials file and the runner in #active: the command and attempt. */
  key: string
}

/** What a cancel needs of a command this process runs (or is about to): its runner, once started, and when the run ends. */
interface RunControl {
  runner: RunnerProcess | null
  cancelled: boolean
  /** Resolves when the run has ended and its work dir is removed. */
  ended: Promise<void>
}

/** What the runner needs besides its spec; storage credentials reach it only as a file (S3_CREDENTIALS_FILE). */
export interface RunnerSettings {
  natsUrl: string
  allowPrivateNetworks: boolean
  s3: { endpoint: string | undefined; bucket: string; region: string; forcePathStyle: boolean; accessKeyId?: string | undefined; secretAccessKey?: string | undefined }
  ffmpegPath: string
  ffprobePath: string
  ytdlpPath: string
  /** The jail of every tool the runners start (api/executors/sandbox-host.ts); null: none, said at start. */
  sandbox?: SandboxHost | null
  logLevel?: string
}

export interface LocalExecutorOptions {
  /** Where each run is recorded on its command (the run-once guard, restart recovery). */
  commands: CommandRepository
  nats: NatsConnection
  logger: Logger
  /** Work directories go under `<dataDir>/work`, the credentials file under `<dataDir>/runner`. */
  dataDir: string
  runner: RunnerSettings
  /** Runners at once; default: the number of cores. */
  concurrency?: number
  /** A runner still alive after this is killed and its command FAILED with TIMEOUT. */
  deadlineMs?: number
  /** A runner whose work directory grows past this is killed and its command FAILED with WORK_DIR_LIMIT_EXCEEDED. */
  workDirMaxBytes?: number
  runnerMain?: string
  /**
   * Warm runners (runner-pool.ts) instead of one fresh process per command:
   * the same runner code and sandbox rules, minus ~300 ms of start-up. Default true.
   */
  warmPool?: boolean
  now?: Clock
  /**
   * A command's storage-destination credentials; none fails its upload as
   * DESTINATION_UPLOAD_FAILED.
   */
  destinationCredentials?: DestinationCredentialSource
  /** Cap each run's CPU at its vcpu_count where the host allows it (cpu-caps.ts); default true. */
  cpuCaps?: boolean
  /** The warm runner's program (ServiceParts.poolWorkerMain); runner-image/runner/pool-worker.ts when unset. */
  poolWorkerMain?: string
  /** A run ended and its slot is free: the in-process dispatcher may hand over the next command. */
  onSlotFreed?: () => void
}

export class LocalExecutor implements Executor {
  readonly name = 'local'
  readonly #commands: CommandRepository
  readonly #log: Logger
  readonly #now: Clock
  readonly #slots: Slots
  readonly #bootId = randomUUID()
  readonly #active = new Map<string, RunnerProcess>()
  /** By command id: the runs this process holds, registered before their run-once guard so a cancel never misses one. */
  readonly #controls = new Map<string, RunControl>()
  readonly #tasks = new Set<Promise<void>>()
  #js: JetStreamClient | null = null
  #env: NodeJS.ProcessEnv | null = null
  #pool: RunnerPool | null = null
  #cpuCaps: CpuCaps | null = null
  #stopping = false

  constructor(private readonly options: LocalExecutorOptions) {
    this.#commands = options.commands
    this.#log = options.logger.child({ component: 'local-executor' })
    this.#now = options.now ?? systemClock
    this.#slots = new Slots(options.concurrency ?? availableParallelism())
  }

  /** Prepares the runners' environment, then resumes or fails what a previous process left running. */
  async start(): Promise<void> {
    const caps = this.options.cpuCaps === false ? { unavailable: 'turned off (cpuCaps: false)' } : CpuCaps.detect()
    if (caps instanceof CpuCaps) this.#cpuCaps = caps
    else this.#log.warn({ reason: caps.unavailable }, 'vcpu_count is recorded but not enforced in local mode on this host')
    await ensureStream(this.options.nats, STATUS_STREAM_DEFINITION)
    await ensureStream(this.options.nats, LOG_STREAM_DEFINITION)
    this.#js = this.options.nats.jetstream()
    this.#env = await this.#runnerEnvironment()
    if (this.options.warmPool ?? true) {
      const js = this.#js
      const main = this.options.poolWorkerMain ?? defaultPoolWorkerMain()
      this.#pool = new RunnerPool(main, this.#env, this.options.dataDir, (event) => this.#publish(event), undefined, (chunk) => publishLogChunk(js, chunk))
      this.#pool.prewarm(this.options.concurrency ?? availableParallelism())
    }
    await this.recover()
  }

  /** Kills the runners of this process; their commands are retried by the next start's recovery. */
  async stop(): Promise<void> {
    this.#stopping = true
    this.#slots.close()
    for (const runner of this.#active.values()) runner.kill('SIGKILL')
    this.#pool?.close()
    await Promise.all(this.#tasks)
    this.#cpuCaps?.removeLeftovers()
  }

  /** Runs it could start now: its concurrency less the runs it holds (running, or queued for a slot). */
  freeSlots(): number {
    return Math.max(0, (this.options.concurrency ?? availableParallelism()) - this.#tasks.size)
  }

  async execute(spec: CommandSpec): Promise<void> {
    if (this.#stopping || !this.#env) throw new Error('the local executor is not running')
    const run = this.#newRun(spec.commandId, 1)
    const control = this.#control(spec.commandId)
    // Handed over before (a crash, or a lease that ran out, before the dispatcher marked the hand-off done), or
    // cancelled: it runs once, or never.
    if (!(await this.#commands.startRun(spec.commandId, run))) {
      this.#controls.delete(spec.commandId)
      return
    }
    this.#track(this.#run(spec, run, control))
  }

  /**
   * Stops a command's run (api/cancels/canceller.ts): a run still waiting for
   * a slot never starts its runner; a running one has its process group
   * (runner, ffmpeg, yt-dlp) killed, and this resolves once it has ended and
   * its work dir is removed. A command this process does not run: nothing to do.
   */
  async cancel(commandId: string): Promise<void> {
    const control = this.#controls.get(commandId)
    if (!control) return
    control.cancelled = true
    if (!control.runner) return
    control.runner.kill('SIGKILL')
    await control.ended
  }

  #control(commandId: string): RunControl {
    let end = () => {}
    const control: RunControl = { runner: null, cancelled: false, ended: new Promise((resolve) => (end = resolve)) }
    this.#controls.set(commandId, control)
    this.#ended.set(control, end)
    return control
  }

  /** Resolves a run's `ended`, by its control. */
  readonly #ended = new WeakMap<RunControl, () => void>()

  /**
   * Every run another start of this service left running: its runner is
   * killed if it survived its parent, then the command is run again once
   * (attempt 2) or, when that was the retry, FAILED with INTERRUPTED; a run
   * whose command has ended meanwhile is only marked ended. Its work dir is
   * removed either way. Assumes one local-mode process per database, as
   * `npm start` is: a run of another live process would look interrupted.
   */
  async recover(): Promise<void> {
    for (const interrupted of await this.#commands.interruptedRuns(this.#bootId)) {
      const { doc, owner } = interrupted
      const log = this.#log.child({ command_id: doc._id, account_id: doc.account_id, attempt: owner.attempt })
      await killOrphan(interrupted.pid, interrupted.workDir)
      // Nothing works in it any more (a warm worker died with its parent, a fresh runner was just killed); a retry gets its own.
      await rm(interrupted.workDir, { recursive: true, force: true }).catch(() => undefined)
      // Ended meanwhile, or cancelled (the canceller reports it): never run again.
      if (isTerminalStatus(doc.status) || doc.cancel_requested_at) {
        await this.#commands.endRun(doc._id, owner)
        continue
      }
      if (owner.attempt >= MAX_ATTEMPTS) {
        log.warn('command interrupted twice by a restart: failing it')
        await this.#fail(doc._id, 'INTERRUPTED', 'the service restarted while the command ran, twice; it is not retried again')
        await this.#commands.endRun(doc._id, owner)
        continue
      }
      const retry = this.#newRun(doc._id, owner.attempt + 1)
      const control = this.#control(doc._id)
      if (!(await this.#commands.restartRun(doc._id, owner, retry))) {
        this.#controls.delete(doc._id)
        continue
      }
      log.warn('command interrupted by a restart: running it again')
      this.#track(this.#run(toCommandSpec(doc), retry, control))
    }
  }

  #newRun(commandId: string, attempt: number): Run {
    const key = `${commandId}-${attempt}`
    return { commandId, attempt, bootId: this.#bootId, key, workDir: join(this.options.dataDir, 'work', key) }
  }

  #track(task: Promise<void>): void {
    this.#tasks.add(task)
    void task.finally(() => {
      this.#tasks.delete(task)
      this.options.onSlotFreed?.()
    })
  }

  async #run(spec: CommandSpec, run: Run, control: RunControl): Promise<void> {
    try {
      await this.#runControlled(spec, run, control)
    } finally {
      if (this.#controls.get(spec.commandId) === control) this.#controls.delete(spec.commandId)
      this.#ended.get(control)?.()
    }
  }

  async #runControlled(spec: CommandSpec, run: Run, control: RunControl): Promise<void> {
    const log = this.#log.child({ command_id: spec.commandId, account_id: spec.accountId, attempt: run.attempt })
    const release = await this.#slots.acquire()
    if (!release) return
    let cap: CpuCap | null = null
    try {
      if (control.cancelled) {
        // Cancelled while it waited for a slot: its runner never starts.
        log.info('cancelled before its runner started')
        await this.#commands.endRun(run.commandId, run)
        return
      }
      await rm(run.workDir, { recursive: true, force: true })
      await mkdir(run.workDir, { recursive: true, mode: 0o700 })
      const credentials = spec.storageDestination ? await this.#destinationCredentials(spec, log) : null
      cap = this.#cpuCap(spec, run, log)
      const placement = cap ? { enter: (pid: number) => cap!.add(pid), leave: (pid: number) => cap!.release(pid) } : undefined
      const runner = this.#pool
        ? this.#pool.run(spec, run.workDir, credentials, placement)
        : startRunner(this.options.runnerMain ?? defaultRunnerMain(), spec, run.workDir, await withDestinationCredentials(this.#env as NodeJS.ProcessEnv, this.options.dataDir, run.key, credentials))
      // A fresh runner is placed as it starts, before node has loaded the runner (let alone started a tool).
      if (cap && !this.#pool) cap.add(runner.pid)
      this.#active.set(run.key, runner)
      control.runner = runner
      // Cancelled while its work dir was being prepared: stopped before it gets far.
      if (control.cancelled) runner.kill('SIGKILL')
      // The pid is for killOrphan, which needs a runner whose command line names the work dir: a fresh one.
      // A pool worker's does not (killOrphan would leave it be), and it takes its process group down itself
      // when this process dies (its stdin closes), so a pooled run records no pid.
      if (!this.#pool) await this.#commands.setRunPid(run.commandId, run, runner.pid)
      let timedOut = false
      // The command's own limit (max_command_run_seconds), within this host's ceiling (COMMAND_DEADLINE_SECONDS).
      const hostDeadlineMs = this.options.deadlineMs ?? DEFAULT_DEADLINE_MS
      const deadlineMs = spec.limits ? Math.min(spec.limits.maxRunSeconds * 1000, hostDeadlineMs) : hostDeadlineMs
      const deadline = setTimeout(() => {
        timedOut = true
        runner.kill('SIGKILL')
      }, deadlineMs)
      let workDirBytes: number | null = null
      const workDirMaxBytes = this.options.workDirMaxBytes ?? DEFAULT_WORK_DIR_MAX_BYTES
      const watch = watchWorkDir(run.workDir, workDirMaxBytes, (bytes) => {
        workDirBytes = bytes
        runner.kill('SIGKILL')
      })
      const exit = await runner.exited
      clearTimeout(deadline)
      watch.stop()
      this.#active.delete(run.key)
      // The runner is gone: the next command may start while this one's bookkeeping is written.
      release()
      // Killed by stop(): the next start's recovery decides, so the run stays running on the record.
      if (this.#stopping && !timedOut && workDirBytes === null && !control.cancelled) return
      if (control.cancelled) {
        // The canceller published FAILED / CANCELLED before the kill; nothing this run reports after it counts.
        log.info({ code: exit.code, signal: exit.signal }, 'runner killed by a cancel')
      } else if (timedOut) {
        log.warn({ deadline_ms: deadlineMs }, 'runner overran its deadline: killed')
        await this.#fail(spec.commandId, 'TIMEOUT', `the command did not finish within ${Math.round(deadlineMs / 1000)} s`)
      } else if (workDirBytes !== null) {
        log.warn({ work_dir_bytes: workDirBytes, work_dir_max_bytes: workDirMaxBytes }, 'runner overfilled its work directory: killed')
        await this.#fail(spec.commandId, 'WORK_DIR_LIMIT_EXCEEDED', workDirLimitMessage(workDirMaxBytes))
      } else if (exit.code !== 0 && exit.code !== 1) {
        // 0 and 1 mean the runner reported SUCCESS or FAILED itself; anything else means it could not.
        log.error({ code: exit.code, signal: exit.signal, runner_log: exit.stderrTail }, 'runner ended without reporting')
        await this.#fail(spec.commandId, 'RUNNER_FAILED', `the runner ended unexpectedly (${exit.signal ?? `exit code ${exit.code}`})`)
      }
      // Written even after a report: the next start must not run again a command whose runner ended but whose
      // report the projector has not applied yet. Kept on the record: it is the run-once guard.
      await this.#commands.endRun(run.commandId, run)
    } catch (err) {
      log.error({ err }, 'local run failed')
      await this.#fail(spec.commandId, 'RUNNER_FAILED', 'the runner could not be started').catch((e: unknown) => log.error({ err: e }, 'could not fail the command'))
    } finally {
      release()
      // A fresh runner's cgroup is empty once it exited; a pooled worker left it already (again is harmless),
      // or never entered it (the pool refused the job).
      cap?.release()
      if (!this.#stopping) await rm(run.workDir, { recursive: true, force: true }).catch(() => undefined)
      await removeDestinationCredentials(this.options.dataDir, run.key).catch(() => undefined)
    }
  }

  /**
   * The run's CPU cgroup, when it has a vcpu_count below this host's cores and this host lets us cap it
   * (cpu-caps.ts); null otherwise: a vcpu_count of every core or more caps nothing here.
   */
  #cpuCap(spec: CommandSpec, run: Run, log: Logger): CpuCap | null {
    if (!spec.limits || !this.#cpuCaps || !capNeeded(spec.limits.vcpuMillis, availableParallelism())) return null
    try {
      return this.#cpuCaps.create(run.key, spec.limits.vcpuMillis)
    } catch (err) {
      // Runs uncapped rather than not at all; said on its log line.
      log.warn({ err }, 'could not create the CPU cgroup of this run: vcpu_count is not enforced for it')
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

  async #fail(commandId: string, errorStatus: string, message: string): Promise<void> {
    await this.#publish(failedEvent({ commandId, errorStatus, errorMessage: message, at: this.#now() }))
  }

  async #publish(event: StatusEvent): Promise<void> {
    await publishStatusEvent(this.#js ?? this.options.nats.jetstream(), event, { logger: this.#log })
  }

  async #runnerEnvironment(): Promise<NodeJS.ProcessEnv> {
    const { runner, dataDir } = this.options
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
      LANG: 'C.UTF-8',
      LOG_LEVEL: runner.logLevel ?? 'warn',
      FFKUBE_STATUS_REPORTER: 'nats',
      NATS_URL: runner.natsUrl,
      ALLOW_PRIVATE_NETWORKS: runner.allowPrivateNetworks ? '1' : '0',
      FFMPEG_PATH: runner.ffmpegPath,
      FFPROBE_PATH: runner.ffprobePath,
      YTDLP_PATH: runner.ytdlpPath,
      ...(runner.sandbox ? { [SANDBOX_ENV]: JSON.stringify(runner.sandbox) } : {}),
      S3_BUCKET: runner.s3.bucket,
      S3_REGION: runner.s3.region,
      S3_FORCE_PATH_STYLE: runner.s3.forcePathStyle ? 'true' : 'false',
      ...(runner.s3.endpoint ? { S3_ENDPOINT: runner.s3.endpoint } : {}),
    }
    if (runner.s3.accessKeyId && runner.s3.secretAccessKey) {
      // A file, not variables: the runner reads it in its upload step only, so the secret is never in its environment.
      const dir = join(dataDir, 'runner')
      await mkdir(dir, { recursive: true, mode: 0o700 })
      const file = join(dir, 's3-credentials.json')
      await writeFile(file, JSON.stringify({ accessKeyId: runner.s3.accessKeyId, secretAccessKey: runner.s3.secretAccessKey }), { mode: 0o600 })
      env.S3_CREDENTIALS_FILE = file
    }
    return env
  }
}

/** Kills a runner that outlived a previous process of this service, if the pid is still that runner. */
async function killOrphan(pid: number | null, workDir: string): Promise<void> {
  if (!pid || pid <= 0) return
  const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')
  // The work dir names the command and attempt: a reused pid belongs to another program.
  if (!cmdline.includes(workDir)) return
  try {
    process.kill(-pid, 'SIGKILL')
  } catch {
    // Gone in between.
  }
}
