/**
 * The loop of a work-list consumer (the dispatcher, the file processor, the
 * canceller). A round drains the list; then the loop sleeps for
 * `pollIntervalMs`, unless nudge() came meanwhile. A round that
 * throws (MongoDB unreachable) is logged and the next poll retries it.
 */
import { systemSleep, type Sleep } from './clock.js'
import type { Logger } from './logger.js'

export interface PolledWork {
  drain(): Promise<unknown>
}

export interface PollingLoopOptions {
  pollIntervalMs: number
  sleep?: Sleep
  log: Logger
  /** The log message of a failed round. */
  roundFailed: string
  /** Runs once before the first round; a failure is logged and the loop goes on. */
  prepare?: () => Promise<void>
}

export class PollingLoop {
  readonly #sleep: Sleep
  #loop: Promise<void> | null = null
  #stopping = new AbortController()
  #wake = new AbortController()
  #nudged = false

  constructor(
    private readonly work: PolledWork,
    private readonly options: PollingLoopOptions,
  ) {
    this.#sleep = options.sleep ?? systemSleep
  }

  /** Between start() and the end of stop(). */
  get running(): boolean {
    return this.#loop !== null
  }

  /** stop() was called: work in hand may end its round early. */
  get stopping(): boolean {
    return this.#stopping.signal.aborted
  }

  /** Starts polling; idempotent. */
  start(): void {
    if (this.#loop) return
    this.#stopping = new AbortController()
    this.#loop = this.#run()
  }

  /** Stops polling and waits for the round in hand. */
  async stop(): Promise<void> {
    if (!this.#loop) return
    this.#stopping.abort()
    this.#wake.abort()
    await this.#loop
    this.#loop = null
  }

  /** Work was just recorded: look now instead of at the next poll. */
  nudge(): void {
    this.#nudged = true
    this.#wake.abort()
  }

  async #run(): Promise<void> {
    const { log } = this.options
    await this.options.prepare?.().catch((err: unknown) => log.warn({ err }, 'preparing the work list failed'))
    while (!this.#stopping.signal.aborted) {
      this.#nudged = false
      try {
        await this.work.drain()
      } catch (err) {
        log.error({ err }, this.options.roundFailed)
      }
      if (this.#nudged || this.#stopping.signal.aborted) continue
      this.#wake = new AbortController()
      await this.#sleep(this.options.pollIntervalMs, this.#wake.signal)
    }
  }
}
