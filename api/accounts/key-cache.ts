import { systemClock, type Clock } from '../clock.js'
import type { AccountChange, AccountChangeListener } from './account-changes.js'
import type { AuthenticatedAccount } from './account-repository.js'
import { hashApiKey } from './api-keys.js'

/**
 * How long a replica trusts a key it read without hearing of a change: the
 * bound on serving a revoked key (or an old plan) when the change's NATS
 * message was lost, e.g. on a link that died without NATS noticing yet.
 */
export const KEY_CACHE_TTL_MS = 5_000

/** Past this many keys the cache starts again empty: a bound, not a policy. */
const MAX_KEYS = 100_000

/** Keys refused (never issued, or revoked: a revocation is for good), kept apart so a flood of made-up keys cannot push out the valid ones. */
const MAX_REFUSED = 10_000

/** A read that overlapped this many changes in a row is answered without being cached. */
const MAX_REREADS = 3

interface Entry {
  account: AuthenticatedAccount
  readAt: number
}

/**
 * The account behind an API key, read from the store once per key per
 * KEY_CACHE_TTL_MS instead of on every request. Changes announced on the
 * account-change feed drop the entries they touch at once; while the feed is
 * lost (NATS disconnected) nothing is cached, so a replica cut off from the
 * announcements reads the store on every request until it hears them again.
 *
 * A read that overlapped a change is read again, so that once a request has
 * been refused for a revoked key, no later request is let in by a read that
 * started before the revocation.
 */
export class KeyCache implements AccountChangeListener {
  readonly #read: (apiKey: string) => Promise<AuthenticatedAccount | null>
  readonly #now: Clock
  readonly #ttlMs: number
  /** By the key's SHA-256: the cache never holds a key in clear. */
  readonly #known = new Map<string, Entry>()
  readonly #refused = new Set<string>()
  readonly #reading = new Map<string, Promise<AuthenticatedAccount | null>>()
  /** Bumped by every change heard: a read that started in an older generation may be stale. */
  #generation = 0
  #feedLive = true

  constructor(read: (apiKey: string) => Promise<AuthenticatedAccount | null>, options: { now?: Clock; ttlMs?: number } = {}) {
    this.#read = read
    this.#now = options.now ?? systemClock
    this.#ttlMs = options.ttlMs ?? KEY_CACHE_TTL_MS
  }

  /** The account a well-formed key acts for; null when the key was never issued or is revoked. */
  authenticate(apiKey: string): Promise<AuthenticatedAccount | null> {
    const hash = hashApiKey(apiKey)
    if (this.#refused.has(hash)) return Promise.resolve(null)
    const entry = this.#known.get(hash)
    if (entry && this.#now().getTime() - entry.readAt < this.#ttlMs) return Promise.resolve(entry.account)
    const reading = this.#reading.get(hash)
    if (reading) return reading
    const read = this.#readAndKeep(apiKey, hash).finally(() => {
      if (this.#reading.get(hash) === read) this.#reading.delete(hash)
    })
    this.#reading.set(hash, read)
    return read
  }

  changed(change: AccountChange): void {
    // A command's change touches no key or plan.
    if (change.kind === 'command') return
    this.#generation++
    // Requests from now on start their own read rather than join one that may predate the change.
    this.#reading.clear()
    for (const [hash, entry] of this.#known) {
      if (change.kind === 'key' ? entry.account.keyId === change.key_id : entry.account.id === change.account_id) this.#known.delete(hash)
    }
  }

  feedLost(): void {
    this.#feedLive = false
    this.#generation++
    this.#reading.clear()
    this.#known.clear()
  }

  feedRestored(): void {
    this.#feedLive = true
  }

  async #readAndKeep(apiKey: string, hash: string): Promise<AuthenticatedAccount | null> {
    for (let attempt = 1; ; attempt++) {
      const generation = this.#generation
      const readAt = this.#now().getTime()
      const account = await this.#read(apiKey)
      if (generation !== this.#generation && attempt < MAX_REREADS) continue
      if (generation !== this.#generation || !this.#feedLive) return account
      if (account) {
        if (this.#known.size >= MAX_KEYS) this.#known.clear()
        this.#known.set(hash, { account, readAt })
      } else {
        if (this.#refused.size >= MAX_REFUSED) this.#refused.clear()
        this.#refused.add(hash)
      }
      return account
    }
  }
}
