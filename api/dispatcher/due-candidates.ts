import type { QueueEntry } from './dispatch-queue.js'

/** A due entry as one query read it, and when (ms on the dispatcher's clock). */
export interface Candidate {
  entry: QueueEntry
  readAt: number
}

/**
 * One round's due entries, shared by the workers of one dispatcher: one
 * query fills the list for all of them and each entry goes to one worker,
 * so workers of the same process never race each other for a lease. The
 * list is refilled when it runs dry; once a query returns fewer than its
 * limit, it has seen everything due and the round ends with that list (what
 * falls due later comes with a nudge or the next poll).
 */
export class DueCandidates {
  readonly #load: (limit: number) => Promise<Candidate[]>
  readonly #inFlight: Set<string>
  readonly #limit: number
  readonly #list: Candidate[] = []
  #loading: Promise<void> | null = null
  #exhausted = false

  /**
   * `inFlight` holds the command ids this process's workers are on, across
   * rounds; `load` leaves them out of its query. A candidate joins the set
   * as it is handed out, before any other query can run, and its worker
   * removes it once the entry is settled.
   */
  constructor(load: (limit: number) => Promise<Candidate[]>, inFlight: Set<string>, limit: number) {
    this.#load = load
    this.#inFlight = inFlight
    this.#limit = limit
  }

  /** The next candidate for the calling worker alone; null when the round is over. */
  async next(): Promise<Candidate | null> {
    for (;;) {
      const candidate = this.#list.shift()
      if (candidate && this.#inFlight.has(candidate.entry._id)) continue
      if (candidate) {
        this.#inFlight.add(candidate.entry._id)
        return candidate
      }
      if (this.#exhausted) return null
      this.#loading ??= this.#refill().finally(() => {
        this.#loading = null
      })
      await this.#loading
    }
  }

  async #refill(): Promise<void> {
    const loaded = await this.#load(this.#limit)
    // A short list was everything due: no query just to learn that the rest is empty.
    if (loaded.length < this.#limit) this.#exhausted = true
    this.#list.push(...loaded)
  }
}
