import { StorageType, type KV, type NatsConnection } from 'nats'

/** The NATS KV bucket that holds the sign-in throttle's counters. */
export const RATE_LIMIT_BUCKET = 'ffkube-rate-limits'

/** A 429's Retry-After: the whole seconds from `now` until the window ends, at least 1. */
export function retryAfterSeconds(windowEndsAt: number, now: Date): number {
  return Math.max(1, Math.ceil((windowEndsAt - now.getTime()) / 1000))
}

interface Waiter {
  /** +1 for a hit, -1 for a hit taken back. */
  by: number
  resolve: (count: number) => void
  reject: (error: unknown) => void
}

/**
 * Fixed-window counters in NATS JetStream KV, exact across API replicas at the
 * cost of a round trip per hit: the console's sign-in throttle, where attempts
 * are rare. (The API's request limits count in memory instead:
 * replicated-counts.ts.)
 *
 * Why KV and not MongoDB: a write to the store per attempt would compete
 * with the records for the database's time; a KV key lives in NATS's memory, which every process already holds a
 * connection to. KV's compare-and-set (`update` with the revision read) makes
 * an increment atomic across replicas. Concurrent hits of one key in this
 * process are coalesced into one compare-and-set of `+n`, so a busy key costs
 * one round trip per batch, not a retry storm.
 *
 * The bucket lives in memory with a max age of two windows: finished windows
 * expire on their own, and a NATS restart forgets at most the current
 * minute's counts, which errs on the side of letting requests in.
 */
export class WindowCounter {
  readonly #kv: KV
  readonly #windowMs: number
  readonly #pending = new Map<string, Waiter[]>()

  private constructor(kv: KV, windowMs: number) {
    this.#kv = kv
    this.#windowMs = windowMs
  }

  static async open(nats: NatsConnection, windowMs: number): Promise<WindowCounter> {
    const kv = await nats.jetstream().views.kv(RATE_LIMIT_BUCKET, { history: 1, ttl: 2 * windowMs, storage: StorageType.Memory })
    return new WindowCounter(kv, windowMs)
  }

  /** Counts one request of `keyId` at `now`; returns the window's count so far and when it ends. */
  async hit(keyId: string, now: Date): Promise<{ count: number; windowEndsAt: number }> {
    const start = this.#windowStart(now)
    const count = await this.#increment(`${keyId}.${start}`, 1)
    return { count, windowEndsAt: start + this.#windowMs }
  }

  /**
   * Takes back one hit of `keyId` counted at `at` (the same instant passed to
   * hit, so the same window): for a caller that counts an attempt before it
   * knows whether the attempt is one that counts.
   */
  async takeBack(keyId: string, at: Date): Promise<void> {
    await this.#increment(`${keyId}.${this.#windowStart(at)}`, -1)
  }

  #windowStart(at: Date): number {
    return Math.floor(at.getTime() / this.#windowMs) * this.#windowMs
  }

  #increment(key: string, by: number): Promise<number> {
    return new Promise((resolve, reject) => {
      const queued = this.#pending.get(key)
      if (queued) {
        queued.push({ by, resolve, reject })
        return
      }
      this.#pending.set(key, [{ by, resolve, reject }])
      void this.#flush(key)
    })
  }

  /** Applies the key's queued hits in batches until none are left; one batch in flight per key. */
  async #flush(key: string): Promise<void> {
    for (;;) {
      const batch = this.#pending.get(key) ?? []
      if (batch.length === 0) {
        this.#pending.delete(key)
        return
      }
      this.#pending.set(key, [])
      try {
        const sum = batch.reduce((total, waiter) => total + waiter.by, 0)
        const total = await this.#add(key, sum)
        // Each request learns its own position in the window, in arrival order.
        let count = total - sum
        for (const waiter of batch) waiter.resolve((count += waiter.by))
      } catch (error) {
        for (const waiter of batch) waiter.reject(error)
      }
    }
  }

  /** Adds `n` to the key's counter with compare-and-set, retrying when another replica wrote first. */
  async #add(key: string, n: number): Promise<number> {
    for (let attempt = 1; ; attempt++) {
      const entry = await this.#kv.get(key)
      const current = entry && entry.operation === 'PUT' ? Number(entry.string()) : 0
      // Never below 0: a hit taken back after its window's counter was lost (a NATS restart) must not bank a spare one.
      const next = Math.max(0, current + n)
      try {
        if (entry) await this.#kv.update(key, String(next), entry.revision)
        else await this.#kv.create(key, String(next))
        return next
      } catch (error) {
        // Lost the race to another replica: read again. Anything else is not ours to retry forever.
        if (attempt >= 50 || !isWrongRevision(error)) throw error
      }
    }
  }
}

/** JetStream's "wrong last sequence" (10071): what both create-if-absent and update-at-revision answer when beaten. */
function isWrongRevision(error: unknown): boolean {
  return (error as { api_error?: { err_code?: number } } | null)?.api_error?.err_code === 10071
}
