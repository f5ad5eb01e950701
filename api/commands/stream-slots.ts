/**
 * How many event streams (GET /commands/:id/events) each account holds open
 * on this API process, and the cap on them. Each open stream holds a socket,
 * a subscription to the command's nudges and a share of the periodic reads of
 * its record, so without a cap one API key could hold thousands. The count is
 * per process: with N API replicas an account may hold N times the cap, which
 * still bounds what any one replica spends on it.
 */
import { RateLimitedError } from '../errors/api-errors.js'

/** EVENT_STREAMS_PER_ACCOUNT's default: a dashboard watching many commands at once fits; thousands do not. */
export const DEFAULT_STREAMS_PER_ACCOUNT = 32

/** What a refused stream is told to wait: a slot frees when one of the account's streams ends, which no one can foresee. */
export const STREAM_SLOT_RETRY_AFTER_SECONDS = 5

/** Frees the slot it was returned for; every call after the first does nothing. */
export type ReleaseSlot = () => void

export class StreamSlots {
  readonly #held = new Map<string, number>()

  constructor(readonly perAccount: number = DEFAULT_STREAMS_PER_ACCOUNT) {}

  /** Takes one of the account's slots; throws RateLimitedError (429) when it holds them all. */
  take(accountId: string): ReleaseSlot {
    const held = this.#held.get(accountId) ?? 0
    if (held >= this.perAccount) {
      throw new RateLimitedError(
        `too many event streams: this account has ${held} open on this server and the limit is ${this.perAccount} at once; close one and retry`,
        STREAM_SLOT_RETRY_AFTER_SECONDS,
      )
    }
    this.#held.set(accountId, held + 1)
    let released = false
    // Once only: a stream has several ways to end (client gone, terminal event, lifetime, shutdown), and some come together.
    return () => {
      if (released) return
      released = true
      const left = (this.#held.get(accountId) ?? 1) - 1
      if (left > 0) this.#held.set(accountId, left)
      else this.#held.delete(accountId)
    }
  }

  /** The slots the account holds now. */
  heldBy(accountId: string): number {
    return this.#held.get(accountId) ?? 0
  }
}
