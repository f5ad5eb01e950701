/**
 * How an API replica learns that a command changed, for its event streams
 * (GET /commands/:id/events): while at least one stream listens to a
 * command, one loop per command reads its record by _id every `intervalMs`
 * (250 ms) and hands the fresh record to every listener; the last listener
 * to leave stops the loop. The record is the one place every change lands
 * (the projector writes it from whichever worker replica took the event), so
 * this works with any number of API and worker replicas and needs nothing
 * from the projector. The cost is one primary-key read per watched command
 * per interval on each replica, shared by all of that replica's streams of
 * the command; a push (a NATS subject the projector publishes to after each
 * write) would save the reads but needs this poll anyway as its fallback
 * for a lost message, so the poll came first.
 */
import type { CommandDocument } from './command-document.js'

/** Reads a command's record; null when it is gone. */
export type RecordReader = (commandId: string) => Promise<CommandDocument | null>

/** Calls `fn` every `ms` until the returned stop is called; a test passes its own. */
export type Every = (ms: number, fn: () => void) => () => void

const realEvery: Every = (ms, fn) => {
  const timer = setInterval(fn, ms)
  return () => clearInterval(timer)
}

export type Listener = (doc: CommandDocument | null) => void

interface Watched {
  listeners: Set<Listener>
  stop: () => void
  reading: boolean
}

/** The spacing of reads, and so of events: at most one per 250 ms. */
export const WATCH_INTERVAL_MS = 250

export class CommandWatch {
  readonly #watched = new Map<string, Watched>()

  constructor(
    private readonly read: RecordReader,
    private readonly onError: (err: unknown, commandId: string) => void,
    private readonly intervalMs = WATCH_INTERVAL_MS,
    private readonly every: Every = realEvery,
  ) {}

  /** Hands `listener` each fresh read of the command until the returned unsubscribe is called. */
  watch(commandId: string, listener: Listener): () => void {
    let watched = this.#watched.get(commandId)
    if (!watched) {
      const fresh: Watched = { listeners: new Set(), stop: () => undefined, reading: false }
      fresh.stop = this.every(this.intervalMs, () => void this.#poll(commandId, fresh))
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

  /** Commands with a read loop running (a gauge for /metrics, and for tests that streams clean up). */
  get watchedCommands(): number {
    return this.#watched.size
  }

  /** Every loop stopped (the server closes). */
  close(): void {
    for (const watched of this.#watched.values()) watched.stop()
    this.#watched.clear()
  }

  async #poll(commandId: string, watched: Watched): Promise<void> {
    // A slow read is not overtaken by the next tick: reads of one command never pile up.
    if (watched.reading) return
    watched.reading = true
    try {
      const doc = await this.read(commandId)
      for (const listener of [...watched.listeners]) listener(doc)
    } catch (err) {
      this.onError(err, commandId)
    } finally {
      watched.reading = false
    }
  }
}
