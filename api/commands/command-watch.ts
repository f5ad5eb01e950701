/**
 * How an API replica learns that a command changed, for its event streams
 * (GET /commands/:id/events). While at least one stream listens to a command,
 * the replica reads the command's record by _id and hands the fresh record to
 * every listener of that command (one read for all of them):
 *
 * - when the status projector's nudge arrives (`ffkube.changed.<id>`, core
 *   NATS, published after each write, contracts/command-changes.ts), and
 * - every `fallbackMs` (1 s) whatever happens, because a nudge may be lost
 *   (core NATS is at most once) and the record, not the nudge, is the truth;
 *
 * never two reads of one command less than `intervalMs` (250 ms) apart, so a
 * stream gets at most one event per 250 ms; except for the nudge of the
 * write that ended the command, which is read at once (once per command), so
 * the end is not held back by the spacing. The last listener to leave stops
 * it all. Without a change feed (no NATS) the fallback poll runs every
 * `intervalMs`. The record is where every change lands, whichever worker
 * replica projected it, so any number of API and worker replicas work; the
 * nudge only makes it cheap: measured with bench/event-streams.ts, polling
 * alone costs one read per watched command per 250 ms, and the embedded store
 * on a loaded 2-core host topped out near 400 reads/s.
 */
import type { CommandDocument } from './command-document.js'

/** Reads a command's record; null when it is gone. */
export type RecordReader = (commandId: string) => Promise<CommandDocument | null>

/** Calls `fn` on each nudge that the command changed (`ended`: the change ended it) until the returned unsubscribe is called. */
export type ChangeFeed = (commandId: string, fn: (ended?: boolean) => void) => () => void

export interface WatchTimers {
  /** Calls `fn` every `ms` until the returned stop is called. */
  every(ms: number, fn: () => void): () => void
  /** Calls `fn` once after `ms` unless the returned cancel is called. */
  after(ms: number, fn: () => void): () => void
  now(): number
}

const realTimers: WatchTimers = {
  every(ms, fn) {
    const timer = setInterval(fn, ms)
    return () => clearInterval(timer)
  },
  after(ms, fn) {
    const timer = setTimeout(fn, ms)
    return () => clearTimeout(timer)
  },
  now: () => performance.now(),
}

export type Listener = (doc: CommandDocument | null) => void

interface Watched {
  listeners: Set<Listener>
  stop: () => void
  reading: boolean
  /** A read was asked for while one ran: another follows it. */
  again: boolean
  /** That read is for the command's end: it follows at once, not after the spacing. */
  againAtOnce: boolean
  lastReadAt: number
  /** A read waiting for the spacing to pass; its cancel. */
  delayed: (() => void) | null
}

/** The least spacing of reads, and so of events: at most one per 250 ms. */
export const WATCH_INTERVAL_MS = 250
/** The safety-net poll while nudges arrive over a change feed. */
export const FALLBACK_POLL_MS = 1000

export interface CommandWatchOptions {
  read: RecordReader
  onError: (err: unknown, commandId: string) => void
  /** Nudges from the projector; absent: poll every intervalMs. */
  changes?: ChangeFeed | undefined
  intervalMs?: number
  fallbackMs?: number
  timers?: WatchTimers
}

export class CommandWatch {
  readonly #watched = new Map<string, Watched>()
  readonly #intervalMs: number
  readonly #fallbackMs: number
  readonly #timers: WatchTimers

  constructor(private readonly options: CommandWatchOptions) {
    this.#intervalMs = options.intervalMs ?? WATCH_INTERVAL_MS
    this.#fallbackMs = options.changes ? (options.fallbackMs ?? FALLBACK_POLL_MS) : this.#intervalMs
    this.#timers = options.timers ?? realTimers
  }

  /** Hands `listener` each fresh read of the command until the returned unsubscribe is called. */
  watch(commandId: string, listener: Listener): () => void {
    let watched = this.#watched.get(commandId)
    if (!watched) {
      const fresh: Watched = { listeners: new Set(), stop: () => undefined, reading: false, again: false, againAtOnce: false, lastReadAt: -Infinity, delayed: null }
      const stopPoll = this.#timers.every(this.#fallbackMs, () => this.#request(commandId, fresh))
      const unsubscribe = this.options.changes?.(commandId, (ended) => this.#request(commandId, fresh, ended === true)) ?? (() => undefined)
      fresh.stop = () => {
        stopPoll()
        unsubscribe()
        fresh.delayed?.()
        fresh.delayed = null
      }
      this.#watched.set(commandId, fresh)
      watched = fresh
    }
    watched.listeners.add(listener)
    const current = watched
    return () => {
      current.listeners.delete(listener)
      if (current.listeners.size > 0 || this.#watched.get(commandId) !== current) return
      current.stop()
      this.#watched.delete(commandId)
    }
  }

  /** Commands with a watch running (a gauge for /metrics, and for tests that streams clean up). */
  get watchedCommands(): number {
    return this.#watched.size
  }

  /** Every watch stopped (the server closes). */
  close(): void {
    for (const watched of this.#watched.values()) watched.stop()
    this.#watched.clear()
  }

  /**
   * A read now, or once the spacing allows; one that is running or waiting
   * already covers it. `atOnce` (the command ended) skips the spacing: a
   * waiting read is brought forward, a running one is followed at once.
   */
  #request(commandId: string, watched: Watched, atOnce = false): void {
    if (this.#watched.get(commandId) !== watched) return
    if (watched.reading) {
      watched.again = true
      watched.againAtOnce ||= atOnce
      return
    }
    if (watched.delayed && !atOnce) return
    watched.delayed?.()
    watched.delayed = null
    const wait = atOnce ? 0 : watched.lastReadAt + this.#intervalMs - this.#timers.now()
    if (wait > 0) {
      watched.delayed = this.#timers.after(wait, () => {
        watched.delayed = null
        void this.#read(commandId, watched)
      })
      return
    }
    void this.#read(commandId, watched)
  }

  async #read(commandId: string, watched: Watched): Promise<void> {
    watched.reading = true
    watched.lastReadAt = this.#timers.now()
    try {
      const doc = await this.options.read(commandId)
      for (const listener of [...watched.listeners]) listener(doc)
    } catch (err) {
      this.options.onError(err, commandId)
    } finally {
      watched.reading = false
    }
    if (watched.again) {
      const atOnce = watched.againAtOnce
      watched.again = false
      watched.againAtOnce = false
      this.#request(commandId, watched, atOnce)
    }
  }
}
