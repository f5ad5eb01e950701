import type { Collection, Db } from 'mongodb'
import { sweepExpired } from '../store-compatibility.js'
import { hashSecret, newSecret } from './session-tokens.js'
import { SIGN_IN_LINK_TTL_MS } from './session-lifetime.js'

/** A one-time sign-in link's token, stored as its hash in `console_sign_in_links`. */
export interface SignInLinkDocument {
  _id: string
  account_id: string
  created_at: Date
  expires_at: Date
  used_at: Date | null
}

/** One-time sign-in links (admin CLI `console-link`); the only reader and writer of `console_sign_in_links`. */
export class SignInLinkRepository {
  readonly #links: Collection<SignInLinkDocument>

  constructor(db: Db) {
    this.#links = db.collection<SignInLinkDocument>('console_sign_in_links')
  }

  async ensureIndexes(): Promise<void> {
    // For the sweep in issue() (api/store-compatibility.ts).
    await this.#links.createIndex({ expires_at: 1 })
  }

  /** A new link token for the account, valid once within SIGN_IN_LINK_TTL_MS. */
  async issue(accountId: string, now: Date): Promise<{ token: string; expires_at: Date }> {
    const token = newSecret()
    const expiresAt = new Date(now.getTime() + SIGN_IN_LINK_TTL_MS)
    await this.#links.insertOne({ _id: hashSecret(token), account_id: accountId, created_at: now, expires_at: expiresAt, used_at: null })
    // Each new link sweeps the expired ones (used ones stay until they expire: a second use must still find and refuse them).
    await sweepExpired(this.#links, now)
    return { token, expires_at: expiresAt }
  }

  /** Uses a token up: its account once, null for an unknown, used or expired token. */
  async redeem(token: string, now: Date): Promise<string | null> {
    // One conditional write: of two racing redemptions only one matches.
    const link = await this.#links.findOneAndUpdate(
      { _id: hashSecret(token), used_at: null, expires_at: { $gt: now } },
      { $set: { used_at: now } },
      { returnDocument: 'before' },
    )
    return link?.account_id ?? null
  }
}
