import { MongoServerError, type Collection, type Db } from 'mongodb'

interface WindowDocument {
  /** `{key id}:{window start in ms}`: one counter per key and window. */
  _id: string
  key_id: string
  window_start: Date
  count: number
}

/**
 * Fixed-window request counters in MongoDB, so every API replica counts
 * against the same number. FerretDB 1.x has no TTL indexes, so finished
 * windows are deleted lazily, at most once per window per process.
 */
export class WindowCounter {
  readonly #windows: Collection<WindowDocument>
  readonly #windowMs: number
  #lastCleanup = 0

  constructor(db: Db, windowMs: number) {
    this.#windows = db.collection('rate_limit_windows')
    this.#windowMs = windowMs
  }

  async ensureIndexes(): Promise<void> {
    await this.#windows.createIndex({ window_start: 1 })
  }

  /** Counts one request of `keyId` at `now`; returns the window's count so far and when it ends. */
  async hit(keyId: string, now: Date): Promise<{ count: number; windowEndsAt: number }> {
    const start = Math.floor(now.getTime() / this.#windowMs) * this.#windowMs
    if (start > this.#lastCleanup) {
      this.#lastCleanup = start
      await this.#windows.deleteMany({ window_start: { $lt: new Date(start) } })
    }
    const count = await this.#increment(`${keyId}:${start}`, keyId, new Date(start))
    return { count, windowEndsAt: start + this.#windowMs }
  }

  async #increment(id: string, keyId: string, windowStart: Date): Promise<number> {
    const update = { $inc: { count: 1 }, $setOnInsert: { key_id: keyId, window_start: windowStart } }
    try {
      const doc = await this.#windows.findOneAndUpdate({ _id: id }, update, { upsert: true, returnDocument: 'after' })
      return doc!.count
    } catch (err) {
      // Two replicas inserting the same new window at once: one wins, the other increments it.
      if (!(err instanceof MongoServerError && err.code === 11000)) throw err
      const doc = await this.#windows.findOneAndUpdate({ _id: id }, update, { returnDocument: 'after' })
      return doc!.count
    }
  }
}
