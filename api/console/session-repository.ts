import type { Collection, Db } from 'mongodb'
import { sweepExpired } from '../store-compatibility.js'
import { hashSecret, newSecret } from './session-tokens.js'
import { sessionExpiry, shouldSlide } from './session-lifetime.js'

/** How the session was opened: with one of the account's API keys, or with a sign-in link from the admin CLI. */
export type SignInMethod = 'api_key' | 'sign_in_link'

/** A console session in `console_sessions`, under the hash of its id (the cookie's value). */
export interface SessionDocument {
  _id: string
  account_id: string
  signed_in_with: SignInMethod
  /** The key it was opened with: revoking that key ends the session too. Null for a sign-in link. */
  key_id: string | null
  created_at: Date
  last_seen_at: Date
  expires_at: Date
}

/** Console sessions; the only reader and writer of `console_sessions`. */
export class SessionRepository {
  readonly #sessions: Collection<SessionDocument>

  constructor(db: Db) {
    this.#sessions = db.collection<SessionDocument>('console_sessions')
  }

  async ensureIndexes(): Promise<void> {
    // For the sweep in open() (api/store-compatibility.ts); lookups check expires_at themselves.
    await this.#sessions.createIndex({ expires_at: 1 })
  }

  /** Opens a session; the id in clear goes into the cookie and is never stored. */
  async open(accountId: string, method: { signedInWith: SignInMethod; keyId: string | null }, now: Date): Promise<{ sessionId: string; session: SessionDocument }> {
    const sessionId = newSecret()
    const session: SessionDocument = {
      _id: hashSecret(sessionId),
      account_id: accountId,
      signed_in_with: method.signedInWith,
      key_id: method.keyId,
      created_at: now,
      last_seen_at: now,
      expires_at: sessionExpiry(now, now),
    }
    await this.#sessions.insertOne(session)
    // Each sign-in sweeps the sessions that have ended, so the collection holds live ones only.
    await sweepExpired(this.#sessions, now)
    return { sessionId, session }
  }

  /**
   * The live session a cookie names, its expiry moved on by this use (at
   * most once a SESSION_SLIDE_EVERY_MS); null when unknown or expired.
   */
  async use(sessionId: string, now: Date): Promise<SessionDocument | null> {
    const session = await this.#sessions.findOne({ _id: hashSecret(sessionId), expires_at: { $gt: now } })
    if (!session || !shouldSlide(session.last_seen_at, now)) return session
    const expiresAt = sessionExpiry(session.created_at, now)
    // Expects the use it read: of two racing slides one wins, and both leave a later expiry.
    await this.#sessions.updateOne({ _id: session._id, last_seen_at: session.last_seen_at }, { $set: { last_seen_at: now, expires_at: expiresAt } })
    return { ...session, last_seen_at: now, expires_at: expiresAt }
  }

  /** Ends a session (sign-out); true when it existed. */
  async end(sessionId: string): Promise<boolean> {
    const result = await this.#sessions.deleteOne({ _id: hashSecret(sessionId) })
    return result.deletedCount === 1
  }
}
