import { spawn, type ChildProcess } from 'node:child_process'
import { setTimeout as sleep } from 'node:timers/promises'

/** How to start one server binary as a child of this process. */
export interface ChildServerOptions {
  /** Short name for error messages, e.g. "nats-server". */
  name: string
  command: string
  args: string[]
  env?: NodeJS.ProcessEnv
  cwd?: string
}

const TAIL_BYTES = 8192
const running = new Set<ChildServer>()

// Children must not outlive us, even when we exit without closing them.
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL')
})

/**
 * A server started as a child process: keeps the tail of its output for error
 * messages, and stops it with SIGTERM, then SIGKILL if it does not go.
 */
export class ChildServer {
  readonly name: string
  readonly exited: Promise<number | null>
  #process: ChildProcess
  #tail = ''
  #exitCode: number | null | undefined

  private constructor(options: ChildServerOptions) {
    this.name = options.name
    this.#process = spawn(options.command, options.args, {
      env: options.env ?? process.env,
      cwd: options.cwd,
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    const keep = (chunk: Buffer) => {
      this.#tail = (this.#tail + chunk.toString('utf8')).slice(-TAIL_BYTES)
    }
    this.#process.stdout?.on('data', keep)
    this.#process.stderr?.on('data', keep)
    running.add(this)
    this.exited = new Promise((resolve) => {
      const done = (code: number | null) => {
        running.delete(this)
        this.#exitCode = code
        resolve(code)
      }
      this.#process.once('exit', (code) => done(code))
      this.#process.once('error', (err) => {
        this.#tail += `\n${err.message}`
        done(null)
      })
    })
  }

  /** Spawns the server; readiness is the caller's to wait for (see waitUntilReady). */
  static start(options: ChildServerOptions): ChildServer {
    return new ChildServer(options)
  }

  get pid(): number | undefined {
    return this.#process.pid
  }

  get hasExited(): boolean {
    return this.#exitCode !== undefined
  }

  /** The last few KiB the server printed, for error messages. */
  outputTail(): string {
    return this.#tail
  }

  kill(signal: NodeJS.Signals): void {
    if (!this.hasExited) this.#process.kill(signal)
  }

  /** Polls `probe` until it returns a value; fails at once if the server exits first. */
  async waitUntilReady<T>(probe: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
    const deadline = Date.now() + timeoutMs
    for (let delay = 10; ; delay = Math.min(delay * 2, 250)) {
      if (this.hasExited) {
        throw new Error(`${this.name} exited before it was ready:\n${this.outputTail()}`)
      }
      const value = await probe().catch(() => undefined)
      if (value !== undefined) return value
      if (Date.now() > deadline) {
        this.kill('SIGKILL')
        throw new Error(`${this.name} was not ready within ${timeoutMs} ms:\n${this.outputTail()}`)
      }
      await sleep(delay)
    }
  }

  /** SIGTERM, then SIGKILL after `graceMs`; resolves once the process is gone. */
  async stop(graceMs = 5_000): Promise<void> {
    if (this.hasExited) return
    this.kill('SIGTERM')
    const timer = setTimeout(() => this.kill('SIGKILL'), graceMs)
    await this.exited
    clearTimeout(timer)
  }
}
