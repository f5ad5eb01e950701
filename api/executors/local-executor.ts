/**
 * EXECUTOR=local: runs each command's runner as a child process on this host,
 * at most `concurrency` at once, in a fresh work directory under the data dir
 * that is removed afterwards. The runner reports over NATS JetStream, as in
 * Kubernetes mode; this executor only publishes a FAILED event itself when the
 * runner could not (it crashed, overran its deadline, or died with a previous
 * process of this service).
 *
 * Idempotent: a run is a document in `runs` inserted with the command id as
 * its unique _id (the one atomic write FerretDB 1.x has), so a second execute
 * of the same command finds it and does nothing. Each run document has one
 * writer, the executor that inserted it.
 */
import { randomUUID } from 'node:crypto'
import { readFile, mkdir, rm, writeFile } from 'node:fs/promises'
import { availableParallelism } from 'node:os'
import { join } from 'node:path'
import type { Collection, Db } from 'mongodb'
import type { JetStreamClient, NatsConnection } from 'nats'
import type { CommandSpec } from '../../contracts/command-spec.js'
import { isTerminalStatus } from '../../contracts/command-types.js'
import type { DestinationCredentials } from '../../contracts/destination-credentials.js'
import { ensureStream, STATUS_STREAM_DEFINITION } from '../../contracts/nats-streams.js'
import { SANDBOX_ENV, type SandboxHost } from '../../contracts/sandbox.js'
import { failedEvent, type StatusEvent } from '../../contracts/status-events.js'
import { publishStatusEvent } from '../../contracts/status-publisher.js'
import { systemClock, type Clock } from '../clock.js'
import { toCommandSpec, type CommandDocument } from '../commands/command-document.js'
import { commandsCollection } from '../commands/command-repository.js'
import type { Logger } from '../logger.js'
import { removeDestinationCredentials, withDestinationCredentials } from './destination-credentials-file.js'
import type { DestinationCredentialSource, Executor } from './executor.js'
import { defaultRunnerMain, startRunner, type RunnerProcess } from './runner-process.js'
import { defaultPoolWorkerMain, RunnerPool } from './runner-pool.js'
import { Slots } from './slots.js'
import { watchWorkDir, workDirLimitMessage } from './work-dir-watch.js'
import { isDuplicateKey } from '../duplicate-key.js'

/** For executors built without config (tests): api/config.ts's defaults of COMMAND_DEADLINE_SECONDS and COMMAND_WORK_DIR_MAX_BYTES. */
const DEFAULT_DEADLINE_MS = 900_000
const DEFAULT_WORK_DIR_MAX_BYTES = 8 * 1024 ** 3

/** How often a command may start: once, and once more after a restart of this service interrupted it. */
const MAX_ATTEMPTS = 2

/**
 * How long a finished run's document is kept. It guards against running a
 * command twice when the dispatcher hands it over again, which can only
 * happen within minutes (a queue entry that outlived a crash, retaken after
 * its lease); a day is far beyond that, and keeps `runs` from growing forever.
 */
const FINISHED_RUN_RETENTION_MS = 24 * 3600_000

interface RunDocument {
  /** The command id for the first attempt, `<command id>#2` for the retry after an interruption. */
  _id: string
  command_id: string
  attempt: number
  /** Which start of this service owns the run: another boot's unfinished run was interrupted. */
  boot_id: string
  /** 'running' (with its pid) is written for a fresh runner only: see #run. */
  state: 'queued' | 'running' | 'finished'
  pid: number | null
  work_dir: string
  created_at: Date
}

/** What the runner needs besides its spec; storage credentials reach it only as a file (S3_CREDENTIALS_FILE). */
export interface RunnerSettings {
  natsUrl: string
  allowPrivateNetworks: boolean
  s3: { endpoint: string | undefined; bucket: string; region: string; forcePathStyle: boolean; accessKeyId?: string | undefined; secretAccessKey?: string | undefined }
  ffmpegPath: string
  ffprobePath: string
  ytdlpPath: string
  /** runner-image/start-gate's library, preloaded into ffprobe; null: probes start when needed. */
  startGate?: string | null
  /** The jail of every tool the runners start (api/executors/sandbox-host.ts); null: none, said at start. */
  sandbox?: SandboxHost | null
  logLevel?: string
}

export interface LocalExecutorOptions {
  db: Db
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
  /**
   * TESTS ONLY: FFmpeg commands run without the argument policy (warm pool
   * only), to show what the sandbox alone holds. No configuration sets it.
   */
  unsafeDisableFfmpegPolicyForTests?: boolean
}

export class LocalExecutor implements Executor {
  readonly name = 'local'
  readonly #runs: Collection<RunDocument>
  readonly #commands: Collection<CommandDocument>
  readonly #log: Logger
  readonly #now: Clock
  readonly #slots: Slots
  readonly #bootId = randomUUID()
  readonly #active = new Map<string, RunnerProcess>()
  readonly #tasks = new Set<Promise<void>>()
  #js: JetStreamClient | null = null
  #env: NodeJS.ProcessEnv | null = null
  #pool: RunnerPool | null = null
  #stopping = false

  constructor(private readonly options: LocalExecutorOptions) {
    this.#runs = options.db.collection<RunDocument>('runs')
    this.#commands = commandsCollection(options.db)
    this.#log = options.logger.child({ component: 'local-executor' })
    this.#now = options.now ?? systemClock
    this.#slots = new Slots(options.concurrency ?? availableParallelism())
  }

  /** Prepares the runners' environment, then resumes or fails what a previous process left running. */
  async start(): Promise<void> {
    await ensureStream(this.options.nats, STATUS_STREAM_DEFINITION)
    this.#js = this.options.nats.jetstream()
    this.#env = await this.#runnerEnvironment()
    if (this.options.warmPool ?? true) {
      const testOnly = this.options.unsafeDisableFfmpegPolicyForTests ? { unsafeDisableFfmpegPolicyForTests: true } : {}
      this.#pool = new RunnerPool(defaultPoolWorkerMain(), this.#env, this.options.dataDir, (event) => this.#publish(event), undefined, testOnly)
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
  }

  async execute(spec: CommandSpec): Promise<void> {
    if (this.#stopping || !this.#env) throw new Error('the local executor is not running')
    const run = this.#newRun(spec.commandId, spec.commandId, 1)
    try {
      await this.#runs.insertOne(run)
    } catch (err) {
      // Handed over before (the dispatcher retried after a crash): it runs once.
      if (isDuplicateKey(err)) return
      throw err
    }
    this.#track(this.#run(spec, run))
  }

  /**
   * Every run another boot of this service left unfinished: its runner is
   * killed if it survived its parent, then the command is run again once
   * (attempt 2, taken with a unique insert) or, when that was the retry,
   * FAILED with INTERRUPTED; its work dir is removed either way. Finished
   * runs older than a day are deleted first. Full scans of `runs` on
   * FerretDB, at start only.
   * Assumes one local-mode process per database, as `npm start` is.
   */
  async recover(): Promise<void> {
    await this.#runs.deleteMany({ state: 'finished', created_at: { $lt: new Date(this.#now().getTime() - FINISHED_RUN_RETENTION_MS) } })
    const unfinished = await this.#runs.find({ state: { $in: ['queued', 'running'] } }).toArray()
    for (const run of unfinished) {
      if (run.boot_id === this.#bootId) continue
      const log = this.#log.child({ command_id: run.command_id, attempt: run.attempt })
      await killOrphan(run)
      // Nothing works in it any more (a warm worker died with its parent, a fresh runner was just killed); a retry gets its own.
      await rm(run.work_dir, { recursive: true, force: true }).catch(() => undefined)
      const doc = await this.#commands.findOne({ _id: run.command_id })
      if (!doc || isTerminalStatus(doc.status)) {
        await this.#finish(run)
        continue
      }
      if (run.attempt >= MAX_ATTEMPTS) {
        log.warn('command interrupted twice by a restart: failing it')
        await this.#fail(run.command_id, 'INTERRUPTED', 'the service restarted while the command ran, twice; it is not retried again')
        await this.#finish(run)
        continue
      }
      const retry = this.#newRun(`${run.command_id}#${run.attempt + 1}`, run.command_id, run.attempt + 1)
      try {
        await this.#runs.insertOne(retry)
      } catch (err) {
        if (!isDuplicateKey(err)) throw err
        await this.#finish(run)
        continue
      }
      await this.#finish(run)
      log.warn('command interrupted by a restart: running it again')
      this.#track(this.#run(toCommandSpec(doc), retry))
    }
  }

  #newRun(id: string, commandId: string, attempt: number): RunDocument {
    const workDir = join(this.options.dataDir, 'work', `${commandId}-${attempt}`)
    return { _id: id, command_id: commandId, attempt, boot_id: this.#bootId, state: 'queued', pid: null, work_dir: workDir, created_at: this.#now() }
  }

  #track(task: Promise<void>): void {
    this.#tasks.add(task)
    void task.finally(() => this.#tasks.delete(task))
  }

  async #run(spec: CommandSpec, run: RunDocument): Promise<void> {
    const log = this.#log.child({ command_id: spec.commandId, account_id: spec.accountId, attempt: run.attempt })
    const release = await this.#slots.acquire()
    if (!release) return
    try {
      await rm(run.work_dir, { recursive: true, force: true })
      await mkdir(run.work_dir, { recursive: true, mode: 0o700 })
      const credentials = spec.storageDestination ? await this.#destinationCredentials(spec, log) : null
      const runner = this.#pool
        ? this.#pool.run(spec, run.work_dir, credentials)
        : startRunner(this.options.runnerMain ?? defaultRunnerMain(), spec, run.work_dir, await withDestinationCredentials(this.#env as NodeJS.ProcessEnv, this.options.dataDir, run._id, credentials))
      this.#active.set(run._id, runner)
      // The pid is for killOrphan, which needs a runner whose command line names the work dir: a fresh one.
      // A pool worker's does not (killOrphan would leave it be), and it takes its process group down itself
      // when this process dies (its stdin closes), so a pooled run skips the write and stays 'queued'.
      if (!this.#pool) await this.#runs.updateOne({ _id: run._id }, { $set: { state: 'running', pid: runner.pid } })
      let timedOut = false
      const deadlineMs = this.options.deadlineMs ?? DEFAULT_DEADLINE_MS
      const deadline = setTimeout(() => {
        timedOut = true
        runner.kill('SIGKILL')
      }, deadlineMs)
      let workDirBytes: number | null = null
      const workDirMaxBytes = this.options.workDirMaxBytes ?? DEFAULT_WORK_DIR_MAX_BYTES
      const watch = watchWorkDir(run.work_dir, workDirMaxBytes, (bytes) => {
        workDirBytes = bytes
        runner.kill('SIGKILL')
      })
      const exit = await runner.exited
      clearTimeout(deadline)
      watch.stop()
      this.#active.delete(run._id)
      // The runner is gone: the next command may start while this one's bookkeeping is written.
      release()
      // Killed by stop(): the next start's recovery decides, so the run stays unfinished.
      if (this.#stopping && !timedOut && workDirBytes === null) return
      if (timedOut) {
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
      await this.#finish(run)
    } catch (err) {
      log.error({ err }, 'local run failed')
      await this.#fail(spec.commandId, 'RUNNER_FAILED', 'the runner could not be started').catch((e: unknown) => log.error({ err: e }, 'could not fail the command'))
    } finally {
      release()
      if (!this.#stopping) await rm(run.work_dir, { recursive: true, force: true }).catch(() => undefined)
      await removeDestinationCredentials(this.options.dataDir, run._id).catch(() => undefined)
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

  /**
   * Written, not skipped: the next start's recovery must not run again a run
   * whose runner ended but whose report the projector may not have applied
   * yet. Kept, not deleted: the document is the run-once guard, and the
   * dispatcher may hand the command over again after the run ended (its queue
   * entry outlived a crash or a failed removal).
   */
  async #finish(run: RunDocument): Promise<void> {
    await this.#runs.updateOne({ _id: run._id }, { $set: { state: 'finished' } })
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
      ...(runner.startGate ? { FFKUBE_START_GATE: runner.startGate } : {}),
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
async function killOrphan(run: RunDocument): Promise<void> {
  if (!run.pid || run.pid <= 0) return
  const cmdline = await readFile(`/proc/${run.pid}/cmdline`, 'utf8').catch(() => '')
  // The work dir names the command and attempt: a reused pid belongs to another program.
  if (!cmdline.includes(run.work_dir)) return
  try {
    process.kill(-run.pid, 'SIGKILL')
  } catch {
    // Gone in between.
  }
}
