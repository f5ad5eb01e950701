/**
 * Warm runners for local mode: long-lived pool-worker processes, each running
 * one command at a time, so a command does not pay node's start, the AWS
 * SDK's load and a NATS connection (~300 ms measured). Each worker is its
 * own process group (killing it on a deadline takes its ffmpeg too) and dies
 * with this process (its stdin closes). A worker is retired after
 * `maxJobs` commands to bound any leak, and replaced when it dies.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process'
import { existsSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import type { CommandSpec } from '../../contracts/command-spec.js'
import type { DestinationCredentials } from '../../contracts/destination-credentials.js'
import type { RunnerExit, RunnerProcess } from './runner-process.js'

/** The built pool worker (beside this file under dist/, or dist/ of the checkout from source). */
export function defaultPoolWorkerMain(): string {
  const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..')
  const built = join(root, 'runner-image', 'runner', 'pool-worker.js')
  return existsSync(built) ? built : join(root, 'dist', 'runner-image', 'runner', 'pool-worker.js')
}

interface Worker {
  child: ChildProcessWithoutNullStreams
  jobs: number
  /** The running job's outcome, resolved by the worker's reply or its death. */
  settle: ((exit: RunnerExit) => void) | null
  dead: boolean
  stderrTail: string
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
    private readonly maxJobs = 200,
  ) {}

  /** Starts `count` idle workers now, so the first commands find them warm. */
  prewarm(count: number): void {
    for (let i = 0; i < count; i++) this.#idle.push(this.#spawn())
  }

  /**
   * Runs one command on an idle (or new) worker; the caller bounds how many
   * run at once. A storage destination's credentials go in the job message
   * beside the spec (a pipe, never argv, env or a file), for its upload step only.
   */
  run(spec: CommandSpec, workDir: string, destinationCredentials: DestinationCredentials | null = null): RunnerProcess {
    if (this.#closed) throw new Error('the runner pool is closed')
    let worker = this.#idle.pop()
    while (worker?.dead) worker = this.#idle.pop()
    const current = worker ?? this.#spawn()
    current.jobs += 1
    const exited = new Promise<RunnerExit>((resolve) => {
      current.settle = resolve
    }).then((exit) => {
      current.settle = null
      if (!current.dead && !this.#closed) {
        if (current.jobs >= this.maxJobs) current.child.stdin.end()
        else this.#idle.push(current)
      }
      return exit
    })
    current.child.stdin.write(`${JSON.stringify({ spec, workDir, ...(destinationCredentials ? { destinationCredentials } : {}) })}\n`)
    const pid = current.child.pid ?? -1
    return { pid, exited, kill: (signal) => killGroup(pid, signal) }
  }

  /** Kills every worker (and whatever tool each runs). */
  close(): void {
    this.#closed = true
    for (const worker of this.#all) killGroup(worker.child.pid ?? -1, 'SIGKILL')
  }

  #spawn(): Worker {
    // A small young generation: the worker streams media and holds little, and V8's default (16 MiB semi-spaces) is most of its RSS.
    const child = spawn(process.execPath, ['--max-semi-space-size=2', this.workerMain], { env: this.env, cwd: this.cwd, detached: true, stdio: ['pipe', 'pipe', 'pipe'] })
    const worker: Worker = { child, jobs: 0, settle: null, dead: false, stderrTail: '' }
    this.#all.add(worker)
    child.stderr.setEncoding('utf8')
    child.stderr.on('data', (chunk: string) => {
      worker.stderrTail = (worker.stderrTail + chunk).slice(-4096)
    })
    child.stdin.on('error', () => undefined)
    createInterface({ input: child.stdout }).on('line', (line) => {
      let status = 'UNREPORTED'
      try {
        status = (JSON.parse(line) as { status: string }).status
      } catch {
        // Not a reply: treated as a job that could not report.
      }
      worker.settle?.({ code: EXIT_BY_STATUS[status] ?? 2, signal: null, stderrTail: worker.stderrTail })
    })
    const died = (code: number | null, signal: NodeJS.Signals | null) => {
      if (worker.dead) return
      worker.dead = true
      this.#all.delete(worker)
      worker.settle?.({ code, signal, stderrTail: worker.stderrTail })
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
