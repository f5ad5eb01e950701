/**
 * EXECUTOR=local: runs each command's runner as a child process on this host,
 * at most `concurrency` at once, in a fresh work directory under the data dir
 * that is removed afterwards. The runner reports over NATS JetStream, as in
 * Kubernetes mode; this executor only publishes a FAILED event itself when the
 * runner could not (it crashed, overran its deadline, or died with a previous
 * process of this service).
 *
 * Idempotent: a run starts only once it is recorded on the command record,
 * in the dispatcher's write that marks its hand-off done (one conditional
 * write, CommandRuns#startsWithHandOff), or without a hand-off by a
 * conditional update of its own (CommandRuns#startRun, "no run yet"); so a
 * second execute of the same command finds the run recorded and does
 * nothing. The run is ended on the record by the projector's write of the
 * command's terminal status, which its runner (or this executor, when the
 * runner could not) reported. A restart of the service
 * that interrupts a run gives it one more start, again a conditional update
 * ("still the interrupted start's"), so two starts of the service cannot both
 * take it over.
 */
import { randomUUID } from 'node:crypto'
import { rm } from 'node:fs/promises'
import { availableParallelism } from 'node:os'
import { join } from 'node:path'
import { JSONCodec, type JetStreamClient, type NatsConnection } from 'nats'
import type { CommandSpec } from '../../contracts/command-spec.js'
import { isTerminalStatus } from '../../contracts/command-types.js'
import { ensureStream, LOG_STREAM_DEFINITION, STATUS_STREAM_DEFINITION } from '../../contracts/nats-streams.js'
import { publishLogChunk } from '../../contracts/log-publisher.js'
import { failedEvent, STATUS_STREAM, statusSubject, type StatusEvent } from '../../contracts/status-events.js'
import { publishStatusEvent } from '../../contracts/status-publisher.js'
import { systemClock, type Clock } from '../clock.js'
import { toCommandSpec } from '../commands/command-document.js'
import type { CommandRepository } from '../commands/command-repository.js'
import type { CommandRuns, RunStart } from '../commands/command-runs.js'
import type { Logger } from '../logger.js'
import type { DestinationCredentialSource, Executor, HandOff, YtdlpCookieSource } from './executor.js'
import type { CpuCap } from './cpu-caps.js'
import { RunnerLauncher } from './runner-launcher.js'
import { RunControls, type RunControl } from './run-controls.js'
import type { RunnerSettings } from './runner-environment.js'
import { failureOf, runnerLimits, superviseRunner, type RunnerLimits, type SupervisedExit } from './runner-supervision.js'

const codec = JSONCodec()

/** How often a command may start: once, and once more after a restart of this service interrupted it. */
const MAX_ATTEMPTS = 2

/** One start of a command's runner, owned by this start of the service (its boot id). */
interface Run extends RunStart {
  commandId: string
  /** Names the run's work dir, CPU cgroup and cookies dir: the command and attempt. */
  key: string
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
  now?: Clock
  /**
   * A command's storage-destination credentials; none fails its upload as
   * DESTINATION_UPLOAD_FAILED.
   */
  destinationCredentials?: DestinationCredentialSource
  /** The account's yt-dlp cookies, for its yt-dlp commands (contracts/ytdlp-cookies.ts). */
  ytdlpCookies?: YtdlpCookieSource
  /** The warm runner's program (ServiceParts.poolWorkerMain); runner-image/runner/pool-worker.ts when unset. */
  poolWorkerMain?: string
}

export class LocalExecutor implements Executor {
  readonly name = 'local'
  readonly #runs: CommandRuns
  readonly #log: Logger
  readonly #now: Clock
  readonly #bootId = randomUUID()
  readonly #controls: RunControls
  readonly #tasks = new Set<Promise<void>>()
  #js: JetStreamClient | null = null
  readonly #launcher: RunnerLauncher
  #stopping = false
  readonly #slotFreed: Array<() => void> = []

  constructor(private readonly options: LocalExecutorOptions) {
    this.#runs = options.commands.runs
    this.#log = options.logger.child({ component: 'local-executor' })
    this.#now = options.now ?? systemClock
    this.#controls = new RunControls(options.concurrency ?? availableParallelism())
    const { dataDir, runner, poolWorkerMain, destinationCredentials, ytdlpCookies } = options
    this.#launcher = new RunnerLauncher({
      ...{ dataDir, runner, poolWorkerMain, destinationCredentials, ytdlpCookies },
      concurrency: options.concurrency ?? availableParallelism(),
      publish: (event) => this.#publish(event),
      publishLog: (chunk) => publishLogChunk(this.#js ?? options.nats.jetstream(), chunk),
      log: this.#log,
    })
  }

  /** Prepares the runners' environment, then resumes or fails what a previous process left running. */
  async start(): Promise<void> {
    await ensureStream(this.options.nats, STATUS_STREAM_DEFINITION)
    await ensureStream(this.options.nats, LOG_STREAM_DEFINITION)
    this.#js = this.options.nats.jetstream()
    await this.#launcher.start()
    await this.recover()
  }

  /** Kills the runners of this process; their commands are retried by the next start's recovery. */
  async stop(): Promise<void> {
    this.#stopping = true
    this.#controls.stop()
    await Promise.all(this.#tasks)
    this.#launcher.close()
  }

  onSlotFreed(listener: () => void): void {
    this.#slotFreed.push(listener)
  }

  /** Runs it could start now: its concurrency less the runs it holds (running, or queued for a slot). */
  freeSlots(): number {
    return Math.max(0, (this.options.concurrency ?? availableParallelism()) - this.#tasks.size)
  }

  async execute(spec: CommandSpec, handOff?: HandOff): Promise<void> {
    if (this.#stopping || !this.#launcher.started) throw new Error('the local executor is not running')
    const run = this.#newRun(spec.commandId, 1)
    const control = this.#controls.open(spec.commandId)
    // Handed over before (a crash, or a lease that ran out, before the dispatcher marked the hand-off done), or
    // cancelled: it runs once, or never.
    const started = await (handOff ? this.#runs.startsWithHandOff(handOff, run) : this.#runs.startRun(spec.commandId, run)).catch((err: unknown) => {
      this.#controls.drop(spec.commandId)
      throw err
    })
    if (!started) {
      this.#controls.drop(spec.commandId)
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
  cancel(commandId: string): Promise<void> {
    return this.#controls.cancel(commandId)
  }

  /**
   * Every run another start of this service left running (its warm worker
   * died with it): the command is run again once (attempt 2) or, when that
   * was the retry, FAILED with INTERRUPTED; a run whose command has ended
   * meanwhile is only marked ended. Its work dir is removed either way.
   * Assumes one local-mode process per database, as `npm start` is: a run of
   * another live process would look interrupted.
   */
  async recover(): Promise<void> {
    for (const interrupted of await this.#runs.interruptedRuns(this.#bootId)) {
      const { doc, owner } = interrupted
      const log = this.#log.child({ command_id: doc._id, account_id: doc.account_id, attempt: owner.attempt })
      // Nothing works in it any more; a retry gets its own.
      await rm(interrupted.workDir, { recursive: true, force: true }).catch(() => undefined)
      // Ended meanwhile, or cancelled (the canceller reports it), or its end is reported and not yet applied: never run again.
      if (isTerminalStatus(doc.status) || doc.cancel_requested_at || (await this.#endReported(doc._id))) {
        await this.#runs.endRun(doc._id, owner)
        continue
      }
      if (owner.attempt >= MAX_ATTEMPTS) {
        log.warn('command interrupted twice by a restart: failing it')
        await this.#fail(doc._id, 'INTERRUPTED', 'the service restarted while the command ran, twice; it is not retried again')
        await this.#runs.endRun(doc._id, owner)
        continue
      }
      const retry = this.#newRun(doc._id, owner.attempt + 1)
      const control = this.#controls.open(doc._id)
      if (!(await this.#runs.restartRun(doc._id, owner, retry))) {
        this.#controls.drop(doc._id)
        continue
      }
      log.warn('command interrupted by a restart: running it again')
      this.#track(this.#run(toCommandSpec(doc), retry, control))
    }
  }

  /**
   * Whether the command's last status event in the stream is terminal: its
   * runner (or this executor) reported its end, which the status projector
   * applies, whether or not it has yet. One lookup by subject, at start-up only.
   */
  async #endReported(commandId: string): Promise<boolean> {
    const jsm = await this.options.nats.jetstreamManager()
    const last = await jsm.streams.getMessage(STATUS_STREAM, { last_by_subj: statusSubject(commandId) }).catch((err: unknown) => {
      if ((err as { code?: unknown }).code === '404') return null
      throw err
    })
    return last !== null && (codec.decode(last.data) as StatusEvent).type !== 'PROCESSING'
  }

  #newRun(commandId: string, attempt: number): Run {
    const key = `${commandId}-${attempt}`
    return { commandId, attempt, bootId: this.#bootId, key, workDir: join(this.options.dataDir, 'work', key) }
  }

  #track(task: Promise<void>): void {
    this.#tasks.add(task)
    void task.finally(() => {
      this.#tasks.delete(task)
      for (const listener of this.#slotFreed) listener()
    })
  }

  async #run(spec: CommandSpec, run: Run, control: RunControl): Promise<void> {
    try {
      await this.#runControlled(spec, run, control)
    } finally {
      this.#controls.close(spec.commandId, control)
    }
  }

  async #runControlled(spec: CommandSpec, run: Run, control: RunControl): Promise<void> {
    const log = this.#log.child({ command_id: spec.commandId, account_id: spec.accountId, attempt: run.attempt })
    const release = await this.#controls.turn()
    if (!release) return
    let cap: CpuCap | null = null
    try {
      if (control.cancelled) {
        // Cancelled while it waited for a slot: its runner never starts.
        log.info('cancelled before its runner started')
        await this.#runs.endRun(run.commandId, run)
        return
      }
      const launched = await this.#launcher.launch(spec, run, log)
      cap = launched.cap
      this.#controls.started(control, launched.runner)
      const limits = runnerLimits(spec, run.workDir, this.options)
      const ended = await superviseRunner(launched.runner, limits)
      this.#controls.exited(control)
      // The runner is gone: the next command may start while this one's bookkeeping is written.
      release()
      // Killed by stop(): the next start's recovery decides, so the run stays running on the record.
      if (this.#stopping && !ended.timedOut && ended.workDirBytes === null && !control.cancelled) return
      await this.#reportEnd(spec, control, ended, limits, log)
      // A terminal event is in the stream now (the runner's, or this executor's for it): the projector's write of
      // it ends the run on the record, and a restart before that finds it there (#endReported). A cancel's FAILED
      // may have been written before the run was recorded, and ended nothing: this run is ended here.
      if (control.cancelled) await this.#runs.endRun(run.commandId, run)
    } catch (err) {
      log.error({ err }, 'local run failed')
      await this.#fail(spec.commandId, 'RUNNER_FAILED', 'the runner could not be started').catch((e: unknown) => log.error({ err: e }, 'could not fail the command'))
    } finally {
      release()
      await this.#launcher.end(run, cap, this.#stopping)
    }
  }

  /** Publishes FAILED on the runner's behalf when it could not report its outcome itself. */
  async #reportEnd(spec: CommandSpec, control: RunControl, ended: SupervisedExit, limits: RunnerLimits, log: Logger): Promise<void> {
    const { exit } = ended
    if (control.cancelled) {
      // The canceller published FAILED / CANCELLED before the kill; nothing this run reports after it counts.
      log.info({ code: exit.code, signal: exit.signal }, 'runner killed by a cancel')
      return
    }
    const failure = failureOf(ended, limits)
    if (!failure) return
    if (failure.errorStatus === 'TIMEOUT') log.warn({ deadline_ms: limits.deadlineMs }, 'runner overran its deadline: killed')
    else if (failure.errorStatus === 'WORK_DIR_LIMIT_EXCEEDED') log.warn({ work_dir_bytes: ended.workDirBytes, work_dir_max_bytes: limits.workDirMaxBytes }, 'runner overfilled its work directory: killed')
    else log.error({ code: exit.code, signal: exit.signal, runner_log: exit.stderrTail }, 'runner ended without reporting')
    await this.#fail(spec.commandId, failure.errorStatus, failure.message)
  }

  async #fail(commandId: string, errorStatus: string, message: string): Promise<void> {
    await this.#publish(failedEvent({ commandId, errorStatus, errorMessage: message, at: this.#now() }))
  }

  async #publish(event: StatusEvent): Promise<void> {
    await publishStatusEvent(this.#js ?? this.options.nats.jetstream(), event, { logger: this.#log })
  }
}
