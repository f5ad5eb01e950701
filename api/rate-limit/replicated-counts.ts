import { StorageType, type KV, type KvEntry, type NatsConnection, type QueuedIterator } from 'nats'
import { randomBytes } from 'node:crypto'
import { systemClock, type Clock } from '../clock.js'

/** The NATS KV bucket where each API replica publishes its own request counts. */
export const REQUEST_COUNTS_BUCKET = 'ffkube-request-counts'

/** How often a replica publishes the counts that changed: the usual lag of the others' view. */
export const PUBLISH_INTERVAL_MS = 100

/** How long opening waits for the counts already published in the bucket before it serves anyway. */
const INITIAL_COUNTS_WAIT_MS = 2_000

/** What one request was answered, from this replica's view of the key's window. */
export interface Admission {
  admitted: boolean
  /** Requests admitted in the window so far, this one included when admitted, as far as this replica knows. */
  count: number
  windowEndsAt: number
}

/** What is reported when publishing fails; once per outage. */
export interface CountsLog {
  warn(details: object, message: string): void
}

interface WindowCounts {
  /** Admitted by this replica. */
  own: number
  /** What this replica last published of `own`. */
  published: number
  /** Admitted by each other replica, as last heard. */
  others: Map<string, number>
  othersTotal: number
}

/**
 * Fixed-window request counts per API key, decided from memory with no
 * network round trip on the request path. Each replica counts the requests
 * it admits and, in the background, publishes its own count of each key's
 * window to one KV entry per replica (`<key>.<window>.<replica>`: one writer
 * per entry, so no compare-and-set), and watches the bucket for the others'
 * counts. A request is admitted while its own count plus the others' last
 * heard counts is below the limit.
 *
 * So each replica admits at most `limit` per key and window on its own, and
 * with N replicas a key gets at most N × limit in a window, whatever happens
 * to NATS; with NATS healthy the overshoot is what the other replicas admitted
 * in the last publish interval plus the watch's delivery
 * (docs/api/plans-and-limits.md). It never admits fewer than `limit`: a
 * refusal means the key's count, as far as is known, has reached it.
 *
 * The bucket is in memory with a max age of two windows: every entry has the
 * same lifetime (the window is in its name), so the bucket's max age expires
 * them and NATS 2.11's per-message TTLs would add nothing.
 */
export class ReplicatedCounts {
  readonly #kv: KV
  readonly #windowMs: number
  readonly #now: Clock
  readonly #log: CountsLog
  readonly #replica = randomBytes(8).toString('hex')
  /** By `<key>.<window start>`. */
  readonly #windows = new Map<string, WindowCounts>()
  readonly #dirty = new Set<string>()
  #watch: QueuedIterator<KvEntry> | undefined
  #timer: NodeJS.Timeout | undefined
  #publishing = false
  #failing = false
  /** The window start the last pruning ran in: windows are pruned once per window, not on every publish. */
  #prunedIn = 0

  private constructor(kv: KV, windowMs: number, now: Clock, log: CountsLog) {
    this.#kv = kv
    this.#windowMs = windowMs
    this.#now = now
    this.#log = log
  }

  static async open(nats: NatsConnection, options: { windowMs: number; now?: Clock; log: CountsLog; publishIntervalMs?: number }): Promise<ReplicatedCounts> {
    const kv = await nats.jetstream().views.kv(REQUEST_COUNTS_BUCKET, { history: 1, ttl: 2 * options.windowMs, storage: StorageType.Memory })
    const counts = new ReplicatedCounts(kv, options.windowMs, options.now ?? systemClock, options.log)
    await counts.#startWatching()
    counts.#timer = setInterval(() => void counts.#publish(), options.publishIntervalMs ?? PUBLISH_INTERVAL_MS)
    counts.#timer.unref()
    return counts
  }

  /** Admits one request of `keyId` at `now` if the key's window is below `limit`, and counts it. */
  hit(keyId: string, limit: number, now: Date): Admission {
    const start = this.#windowStart(now.getTime())
    const name = `${keyId}.${start}`
    let window = this.#windows.get(name)
    if (!window) {
      window = { own: 0, published: 0, others: new Map(), othersTotal: 0 }
      this.#windows.set(name, window)
    }
    const windowEndsAt = start + this.#windowMs
    const count = window.own + window.othersTotal
    if (count >= limit) return { admitted: false, count, windowEndsAt }
    window.own++
    this.#dirty.add(name)
    return { admitted: true, count: count + 1, windowEndsAt }
  }

  async close(): Promise<void> {
    clearInterval(this.#timer)
    this.#watch?.stop()
    await this.#publish()
  }

  #windowStart(at: number): number {
    return Math.floor(at / this.#windowMs) * this.#windowMs
  }

  async #startWatching(): Promise<void> {
    let initialized!: () => void
    const ready = new Promise<void>((resolve) => (initialized = resolve))
    this.#watch = await this.#kv.watch({ key: '>', initializedFn: () => initialized() })
    const watch = this.#watch
    void (async () => {
      for await (const entry of watch) this.#heard(entry)
    })().catch((error: unknown) => this.#log.warn({ err: error }, 'stopped hearing the other replicas\' request counts; this one still admits at most the limit'))
    const waited = setTimeout(initialized, INITIAL_COUNTS_WAIT_MS)
    await ready
    clearTimeout(waited)
  }

  /** Another replica's count of one window, e.g. `key_1.1764240000000.<replica>` = 12. */
  #heard(entry: KvEntry): void {
    if (entry.operation !== 'PUT') return
    const cut = entry.key.lastIndexOf('.')
    const replica = entry.key.slice(cut + 1)
    if (cut < 0 || replica === this.#replica) return
    const name = entry.key.slice(0, cut)
    const start = Number(name.slice(name.lastIndexOf('.') + 1))
    // A finished window is no one's business any more.
    if (!(start >= this.#windowStart(this.#now().getTime()) - this.#windowMs)) return
    const count = Number(entry.string())
    if (!Number.isSafeInteger(count) || count < 0) return
    let window = this.#windows.get(name)
    if (!window) {
      window = { own: 0, published: 0, others: new Map(), othersTotal: 0 }
      this.#windows.set(name, window)
    }
    // Counts only grow within a window; an older message delivered late must not shrink one.
    const before = window.others.get(replica) ?? 0
    if (count <= before) return
    window.others.set(replica, count)
    window.othersTotal += count - before
  }

  /** Publishes every count that changed since the last time; one round of puts at a time. */
  async #publish(): Promise<void> {
    if (this.#publishing) return
    this.#publishing = true
    try {
      this.#forgetFinishedWindows()
      const names = [...this.#dirty]
      this.#dirty.clear()
      const results = await Promise.allSettled(
        names.map(async (name) => {
          const window = this.#windows.get(name)
          if (!window || window.own === window.published) return
          const own = window.own
          await this.#kv.put(`${name}.${this.#replica}`, String(own))
          window.published = Math.max(window.published, own)
        }),
      )
      const failed = results.flatMap((result, i) => (result.status === 'rejected' ? [{ name: names[i]!, error: result.reason as unknown }] : []))
      for (const { name } of failed) if (this.#windows.has(name)) this.#dirty.add(name)
      if (failed.length > 0 && !this.#failing) this.#log.warn({ err: failed[0]!.error }, 'request counts not published; other replicas see this one\'s counts late (each replica still admits at most the limit)')
      this.#failing = failed.length > 0
    } finally {
      this.#publishing = false
    }
  }

  #forgetFinishedWindows(): void {
    const current = this.#windowStart(this.#now().getTime())
    if (current === this.#prunedIn) return
    this.#prunedIn = current
    for (const name of this.#windows.keys()) {
      const start = Number(name.slice(name.lastIndexOf('.') + 1))
      if (start < current - this.#windowMs) {
        this.#windows.delete(name)
        this.#dirty.delete(name)
      }
    }
  }
}
