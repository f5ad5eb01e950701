import { performance } from 'node:perf_hooks'
import type { Collection, Db, Filter } from 'mongodb'
import { insertEach, PerTurnBatch } from './batched-writes.js'
import { StoreIndexes } from '../store-indexes.js'

/**
 * The delivery log (`webhook_attempts`): one record per attempt that ended,
 * the account's view of its webhooks (GET /webhook-deliveries). Its `_id` is
 * the attempt's key, so an attempt's end is logged once: a holder that lost
 * its delivery to another replica finds the other's entry standing.
 */

export type WebhookTarget = 'account' | 'command'

/** One attempt's end; `_id` is attemptKey(delivery_id, attempt). */
export interface AttemptRecord {
  _id: string
  delivery_id: string
  command_id: string
  account_id: string
  target: WebhookTarget
  url: string
  attempt: number
  /** The account configuration's revision the attempt was made under; null for a per-command URL. */
  config_revision: string | null
  outcome: 'success' | 'failure'
  status_code: number | null
  error: string | null
  duration_ms: number
  started_at: Date
  finished_at: Date
  /**
   * Wall-clock milliseconds (fractional) when the end was logged: orders
   * attempts that share a `finished_at` millisecond (or a test's frozen clock),
   * so "the newest attempt" is always defined.
   */
  logged_seq: number
}

/** See AttemptRecord.logged_seq. */
export function loggedSeq(): number {
  return performance.timeOrigin + performance.now()
}

export function attemptKey(deliveryId: string, attempt: number): string {
  return `${deliveryId}:${attempt}`
}

export class AttemptLog {
  readonly #attempts: Collection<AttemptRecord>
  readonly #inserts: PerTurnBatch<AttemptRecord, boolean>
  readonly #indexes: StoreIndexes

  constructor(db: Db) {
    this.#attempts = db.collection('webhook_attempts')
    this.#indexes = new StoreIndexes(db)
    this.#inserts = new PerTurnBatch((records) => insertEach(this.#attempts, records))
  }

  async ensureIndexes(): Promise<void> {
    await this.#indexes.ensure(this.#attempts, { account_id: 1 }, { finished_at: -1, logged_seq: -1 })
  }

  /**
   * Logs an attempt's end, once per attempt key. `logged` is false when an
   * entry was there first; then that entry stands and is returned.
   */
  async record(record: AttemptRecord): Promise<{ record: AttemptRecord; logged: boolean }> {
    if (await this.#inserts.add(record)) return { record, logged: true }
    return { record: (await this.#attempts.findOne({ _id: record._id })) ?? record, logged: false }
  }

  async find(deliveryId: string, attempt: number): Promise<AttemptRecord | null> {
    return this.#attempts.findOne({ _id: attemptKey(deliveryId, attempt) })
  }

  /** The account's attempts, newest first. */
  async list(accountId: string, page: { limit: number; offset: number; commandId?: string | undefined }): Promise<AttemptRecord[]> {
    const filter: Filter<AttemptRecord> = { account_id: accountId }
    if (page.commandId) filter.command_id = page.commandId
    return this.#attempts.find(filter).sort({ finished_at: -1, logged_seq: -1 }).skip(page.offset).limit(page.limit).toArray()
  }
}
