import type { Collection, Db } from 'mongodb'
import { systemClock, type Clock } from '../clock.js'
import type { SealedValue, SecretBox } from '../crypto/secret-box.js'
import type { CookieJarText } from './netscape-cookies.js'

/** An account's yt-dlp cookies; one per account, so `_id` is the account id. */
export interface YtdlpCookiesDocument {
  _id: string
  /** The normalised cookies.txt (netscape-cookies.ts), sealed with the API's ENCRYPTION_KEYS. */
  sealed: SealedValue
  cookie_count: number
  domains: string[]
  created_at: Date
  updated_at: Date
}

/** What GET shows: never a cookie, only how many there are, for which sites, and since when. */
export type YtdlpCookiesMetadata = Omit<YtdlpCookiesDocument, 'sealed'>

/**
 * The `ytdlp_cookies` collection: written by the API's routes, read (opened)
 * by the worker when it starts one of the account's yt-dlp commands.
 */
export class YtdlpCookieRepository {
  readonly #cookies: Collection<YtdlpCookiesDocument>
  readonly #box: SecretBox
  readonly #now: Clock

  constructor(db: Db, box: SecretBox, now: Clock = systemClock) {
    this.#cookies = db.collection('ytdlp_cookies')
    this.#box = box
    this.#now = now
  }

  /** Creates or replaces the account's cookies. */
  async put(accountId: string, jar: CookieJarText): Promise<YtdlpCookiesMetadata> {
    const now = this.#now()
    const doc = await this.#cookies.findOneAndUpdate(
      { _id: accountId },
      { $set: { sealed: this.#box.seal(jar.text), cookie_count: jar.cookieCount, domains: jar.domains, updated_at: now }, $setOnInsert: { created_at: now } },
      { upsert: true, returnDocument: 'after' },
    )
    // No projection on findOneAndUpdate: the embedded store has none (api/store-compatibility.ts).
    const { sealed: _sealed, ...metadata } = doc!
    return metadata
  }

  async metadata(accountId: string): Promise<YtdlpCookiesMetadata | null> {
    return this.#cookies.findOne<YtdlpCookiesMetadata>({ _id: accountId }, { projection: { sealed: 0 } })
  }

  /** Removes the account's cookies; false when it had none. */
  async delete(accountId: string): Promise<boolean> {
    return (await this.#cookies.deleteOne({ _id: accountId })).deletedCount === 1
  }

  /** The account's cookies.txt in clear, for its yt-dlp runs only; null when it has none. */
  async openForRunner(accountId: string): Promise<string | null> {
    const doc = await this.#cookies.findOne({ _id: accountId }, { projection: { sealed: 1 } })
    return doc ? this.#box.open(doc.sealed) : null
  }
}
