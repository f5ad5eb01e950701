/**
 * A work queue of `namespace/name` keys, shaped like client-go's: a key waits
 * at most once (dedupe), a key being processed is never handed to a second
 * worker (it is re-queued when the first finishes), and failed keys come back
 * after a per-key exponential delay. Timers are injected so tests control time.
 */
import { exponentialDelay } from './backoff.js'

/** The clock and setTimeout/clearTimeout, injectable. */
export interface Timers {
  now(): number
  setTimeout(fn: () => void, ms: number): unknown
  clearTimeout(handle: unknown): void
}

export const realTimers: Timers = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
}

export interface WorkQueueOptions {
  baseDelayMs?: number
  maxDelayMs?: number
  timers?: Timers
  /** Called whenever the number of waiting keys changes (for the queue-depth gauge). */
  onDepth?: (depth: number) => void
}

export class WorkQueue {
  private readonly queue: string[] = []
  /** Keys waiting to be processed (in `queue`, or to be re-queued when their worker finishes). */
  private readonly dirty = new Set<string>()
  private readonly processing = new Set<string>()
  private readonly failures = new Map<string, number>()
  private readonly delayed = new Map<string, { at: number; handle: unknown }>()
  private readonly waiters: Array<(key: string | undefined) => void> = []
  private shuttingDown = false
  private readonly baseDelayMs: number
  private readonly maxDelayMs: number
  private readonly timers: Timers
  private readonly onDepth: (depth: number) => void

  constructor(options: WorkQueueOptions = {}) {
    this.baseDelayMs = options.baseDelayMs ?? 5
    this.maxDelayMs = options.maxDelayMs ?? 300_000
    this.timers = options.timers ?? realTimers
    this.onDepth = options.onDepth ?? (() => {})
  }

  /** Keys waiting for a worker. */
  get length(): number {
    return this.queue.length
  }

  /** Enqueue a key now; a key already waiting is not added twice. */
  add(key: string): void {
    if (this.shuttingDown || this.dirty.has(key)) return
    this.dirty.add(key)
    // Being processed: done() puts it back, so one key never runs on two workers.
    if (this.processing.has(key)) return
    const waiter = this.waiters.shift()
    if (waiter) {
      this.dirty.delete(key)
      this.processing.add(key)
      waiter(key)
      return
    }
    this.queue.push(key)
    this.onDepth(this.queue.length)
  }

  /** Enqueue after a delay; an earlier pending delay for the key wins. */
  addAfter(key: string, ms: number): void {
    if (this.shuttingDown) return
    if (ms <= 0) return this.add(key)
    const at = this.timers.now() + ms
    const existing = this.delayed.get(key)
    if (existing && existing.at <= at) return
    if (existing) this.timers.clearTimeout(existing.handle)
    const handle = this.timers.setTimeout(() => {
      this.delayed.delete(key)
      this.add(key)
    }, ms)
    this.delayed.set(key, { at, handle })
  }

  /** Enqueue after this key's next exponential delay. */
  addRateLimited(key: string): void {
    const failures = (this.failures.get(key) ?? 0) + 1
    this.failures.set(key, failures)
    this.addAfter(key, exponentialDelay(failures, this.baseDelayMs, this.maxDelayMs))
  }

  /** How many times in a row this key failed. */
  numRequeues(key: string): number {
    return this.failures.get(key) ?? 0
  }

  /** The key succeeded: its next failure starts the backoff again. */
  forget(key: string): void {
    this.failures.delete(key)
  }

  /** The next key, or undefined once shut down. Call done(key) when finished with it. */
  get(): Promise<string | undefined> {
    const key = this.queue.shift()
    if (key !== undefined) {
      this.dirty.delete(key)
      this.processing.add(key)
      this.onDepth(this.queue.length)
      return Promise.resolve(key)
    }
    if (this.shuttingDown) return Promise.resolve(undefined)
    return new Promise((resolve) => this.waiters.push(resolve))
  }

  /** The worker finished with key; if it was added meanwhile, it waits again. */
  done(key: string): void {
    this.processing.delete(key)
    if (this.dirty.has(key)) {
      this.dirty.delete(key)
      this.add(key)
    }
  }

  /** Wakes waiting workers with undefined and drops delayed keys; keys being processed finish normally. */
  shutDown(): void {
    this.shuttingDown = true
    for (const { handle } of this.delayed.values()) this.timers.clearTimeout(handle)
    this.delayed.clear()
    for (const waiter of this.waiters.splice(0)) waiter(undefined)
  }

  get isShuttingDown(): boolean {
    return this.shuttingDown
  }
}
