/**
 * Warm runners for local mode: long-lived pool-worker processes, each running
 * one command at a time, so a command does not pay node's start and the AWS
 * SDK's load (~300 ms measured). Each worker is its own process group
 * (killing it on a deadline takes its ffmpeg too) and dies with this process
 * (its stdin closes). A worker is retired after `maxJobs` commands to bound
 * any leak, and replaced when it dies.
 * Workers hold no NATS connection (7 MiB each, beside ffmpeg): they write
 * their status events to stdout and this pool relays them through `publish`,
 * in order. A job ends only after its events were published, so the executor
 * never marks a run finished whose terminal event is still in this process.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process'
import { existsSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import type { CommandSpec } from '../../contracts/command-spec.js'
import type { DestinationCredentials } from '../../contracts/destination-credentials.js'
import { localRunnerNodeFlags } from '../../contracts/runner-node-flags.js'
import type { StatusEvent } from '../../contracts/status-events.js'
import { logChunkIn, type LogChunk } from '../../contracts/log-chunks.js'

/** The built pool worker (beside this file under dist/, or dist/ of the checkout from source). */
export function defaultPoolWorkerMain(): string {
  const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..')
  const built = join(root, 'runner-image', 'runner', 'pool-worker.js')
  return existsSync(built) ? built : join(root, 'dist', 'runner-image', 'runner', 'pool-worker.js')
}

/** How a job ended: 0 and 1 when the worker reported SUCCESS or FAILED, else what took the worker down. */
export interface RunnerExit {
  code: number | null
  signal: NodeJS.Signals | null
  /** The last few KiB of the worker's own log (stderr), for the executor's log. */
  stderrTail: string
}

/** One job on a worker, as the executor supervises it. */
export interface RunnerProcess {
  /** The worker's pid (its process group's too). */
  pid: number
  exited: Promise<RunnerExit>
  /** Signals the worker's whole process group (the worker and its ffmpeg/yt-dlp). */
  kill(signal: NodeJS.Signals): void
}

interface Worker {
  child: ChildProcessWithoutNullStreams
  jobs: number
  /** The running job's outcome, resolved by the worker's reply or its death. */
  settle: ((exit: RunnerExit) => void) | null
  dead: boolean
  stderrTail: string
  /** The worker's events published so far, in order. */
  published: Promise<void>
  /** A terminal event of the running job could not be published. */
  unreported: boolean
}

/** Where a worker runs one job's processes (a CPU cgroup, cpu-caps.ts): entered before the job, left after it. */
export interface WorkerPlacement {
  enter(pid: number): void
  leave(pid: number): void
}

/** Publishes one status event (with retries); rejects when it gives up. */
export type StatusPublisher = (event: StatusEvent) => Promise<void>

/** A line of the worker: one of its job's status events, else the job's end. */
function statusEventIn(message: unknown): StatusEvent | null {
  const event = message as Partial<StatusEvent> | null
  return typeof event?.event_id === 'string' && typeof event.command_id === 'string' && typeof event.type === 'string' ? (event as StatusEvent) : null
}

const EXIT_BY_STATUS: Record<string, number> = { SUCCESS: 0, FAILED: 1 }

export class RunnerPool {
  readonly #idle: Worker[] = []
  readonly #all = new Set<Worker>()
  #closed = false

  constructor(
    private readonly workerMain: string,
    private readonly env: NodeJS.ProcessEnv,
    private readonly cwd: string,
    private readonly publish: StatusPublisher,
    private readonly maxJobs = 200,
    /** Relays a worker's log chunks (its tools' stderr) to FFKUBE_LOGS; unset: dropped. */
    private readonly publishLog: ((chunk: LogChunk) => Promise<void>) | null = null,
  ) {}

  /** Starts `count` idle workers now, so the first commands find them warm. */
  prewarm(count: number): void {
    for (let i = 0; i < count; i++) this.#idle.push(this.#spawn())
  }

  /**
   * Runs one command on an idle (or new) worker; the caller bounds how many
   * run at once. A storage destination's credentials go in the job message
   * beside the spec (a pipe, never argv, env or a file), for its upload step only.
   * A yt-dlp command's cookies file is named there too (contracts/ytdlp-cookies.ts).
   */
  run(spec: CommandSpec, workDir: string, destinationCredentials: DestinationCredentials | null = null, placement?: WorkerPlacement, ytdlpCookiesFile: string | null = null): RunnerProcess {
    if (this.#closed) throw new Error('the runner pool is closed')
    let worker = this.#idle.pop()
    while (worker?.dead) worker = this.#idle.pop()
    const current = worker ?? this.#spawn()
    current.jobs += 1
    const exited = new Promise<RunnerExit>((resolve) => {
      current.settle = resolve
    }).then((exit) => {
      current.settle = null
      // Out of the job's cgroup before the worker can take another job.
      placement?.leave(current.child.pid ?? -1)
      if (!current.dead && !this.#closed) {
        if (current.jobs >= this.maxJobs) current.child.stdin.end()
        else this.#idle.push(current)
      }
      return exit
    })
    // Before the job reaches the worker, so every tool it starts for the job is placed too.
    placement?.enter(current.child.pid ?? -1)
    current.child.stdin.write(`${JSON.stringify({ spec, workDir, ...(destinationCredentials ? { destinationCredentials } : {}), ...(ytdlpCookiesFile ? { ytdlpCookiesFile } : {}) })}\n`)
    const pid = current.child.pid ?? -1
    return { pid, exited, kill: (signal) => killGroup(pid, signal) }
  }

  /** Kills every worker (and whatever tool each runs). */
  close(): void {
    this.#closed = true
    for (const worker of this.#all) killGroup(worker.child.pid ?? -1, 'SIGKILL')
  }

  #spawn(): Worker {
    const child = spawn(process.execPath, [...localRunnerNodeFlags(), this.workerMain], { env: this.env, cwd: this.cwd, detached: true, stdio: ['pipe', 'pipe', 'pipe'] })
    const worker: Worker = { child, jobs: 0, settle: null, dead: false, stderrTail: '', published: Promise.resolve(), unreported: false }
    this.#all.add(worker)
    child.stderr.setEncoding('utf8')
    child.stderr.on('data', (chunk: string) => {
      worker.stderrTail = (worker.stderrTail + chunk).slice(-4096)
    })
    child.stdin.on('error', () => undefined)
    createInterface({ input: child.stdout }).on('line', (line) => {
      let message: unknown = null
      try {
        message = JSON.parse(line)
      } catch {
        // Not JSON: treated as the end of a job that could not report.
      }
      const chunk = logChunkIn(message)
      if (chunk) {
        // In order with the events, so a job's log is out before the job ends; a lost chunk costs only log lines.
        const publishLog = this.publishLog
        if (publishLog) worker.published = worker.published.then(() => publishLog(chunk).catch(() => undefined))
        return
      }
      const event = statusEventIn(message)
      if (event) {
        worker.published = worker.published.then(() =>
          this.publish(event).catch(() => {
            // Given up on: a lost progress event is replaced by the next; a lost terminal one means the job did not report.
            if (event.type !== 'PROCESSING') worker.unreported = true
          }),
        )
        return
      }
      const status = (message as { status?: unknown } | null)?.status
      const code = typeof status === 'string' ? (EXIT_BY_STATUS[status] ?? 2) : 2
      void worker.published.then(() => {
        worker.settle?.({ code: worker.unreported ? 2 : code, signal: null, stderrTail: worker.stderrTail })
        worker.unreported = false
      })
    })
    const died = (code: number | null, signal: NodeJS.Signals | null) => {
      if (worker.dead) return
      worker.dead = true
      this.#all.delete(worker)
      // What it wrote before dying still goes out first: its terminal event wins over the executor's RUNNER_FAILED.
      void worker.published.then(() => worker.settle?.({ code, signal, stderrTail: worker.stderrTail }))
    }
    child.once('exit', died)
    child.once('error', () => died(null, null))
    return worker
  }
}

function killGroup(pid: number, signal: NodeJS.Signals): void {
  if (pid <= 0) return
  try {
    process.kill(-pid, signal)
  } catch {
    // Already gone.
  }
}
