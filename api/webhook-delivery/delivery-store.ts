import { performance } from 'node:perf_hooks'
import { BatchedInserter } from './batched-inserts.js'
import type { Collection, Db, Filter } from 'mongodb'
import { isDuplicateKey } from '../duplicate-key.js'

/**
 * The deliverer's three collections. FerretDB 1.x performs exactly one write
 * atomically, the insert of a unique `_id`, so every "only one replica may do
 * this" step is such an insert: `webhook_attempt_claims` (the right to send
 * attempt n of a delivery) and `webhook_attempts` (the right to say how it
 * ended). `webhook_due` holds only deliveries still waiting for a retry, so
 * the scan FerretDB makes for every query stays small.
 */

export type WebhookTarget = 'account' | 'command'

/** A delivery waiting for its next attempt. `_id` is the delivery id. */
export interface DueDelivery {
  _id: string
  command_id: string
  account_id: string
  /** The attempt to make next, 1-based. */
  attempt: number
  due_at: Date
  created_at: Date
}

/** Claimed before sending; `_id` is `<delivery id>:<attempt>`. */
export interface AttemptClaim {
  _id: string
  delivery_id: string
  command_id: string
  account_id: string
  target: WebhookTarget
  url: string
  attempt: number
  config_revision: string | null
  claimed_at: Date
}

/** One attempt in the delivery log; `_id` equals its claim's. */
export interface AttemptRecord extends Omit<AttemptClaim, 'claimed_at'> {
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

export class DeliveryStore {
  readonly #due: Collection<DueDelivery>
  readonly #claims: Collection<AttemptClaim>
  readonly #attempts: Collection<AttemptRecord>
  readonly #claimInserts: BatchedInserter<AttemptClaim>
  readonly #recordInserts: BatchedInserter<AttemptRecord>

  constructor(db: Db) {
    this.#due = db.collection('webhook_due')
    this.#claims = db.collection('webhook_attempt_claims')
    this.#attempts = db.collection('webhook_attempts')
    this.#claimInserts = new BatchedInserter(this.#claims)
    this.#recordInserts = new BatchedInserter(this.#attempts)
  }

  /** For MongoDB proper; FerretDB 1.x scans regardless. */
  async ensureIndexes(): Promise<void> {
    await this.#due.createIndex({ due_at: 1 })
    await this.#attempts.createIndex({ account_id: 1, finished_at: -1, logged_seq: -1 })
  }

  /** True when this caller won the right to send the attempt. */
  async claim(claim: AttemptClaim): Promise<boolean> {
    return this.#claimInserts.insert(claim)
  }

  async findClaim(key: string): Promise<AttemptClaim | null> {
    return this.#claims.findOne({ _id: key })
  }

  /** Logs an attempt's end; if another writer logged it first, theirs stands and is returned. */
  async record(record: AttemptRecord): Promise<AttemptRecord> {
    if (await this.#recordInserts.insert(record)) return record
    return (await this.#attempts.findOne({ _id: record._id })) ?? record
  }

  async findRecord(key: string): Promise<AttemptRecord | null> {
    return this.#attempts.findOne({ _id: key })
  }

  /**
   * Moves a delivery to `attempt` at `dueAt`, from wherever the earlier
   * attempt left it: created when absent, advanced only from `attempt - 1`, so
   * a late or repeated transition never moves a delivery backwards.
   */
  async scheduleAttempt(due: Omit<DueDelivery, 'created_at'>, now: Date): Promise<void> {
    try {
      await this.#due.insertOne({ ...due, created_at: now })
    } catch (error) {
      if (!isDuplicateKey(error)) throw error
      await this.#due.updateOne({ _id: due._id, attempt: due.attempt - 1 }, { $set: { attempt: due.attempt, due_at: due.due_at } })
    }
  }

  /** A new delivery (redeliver): attempt 1, due now. */
  async enqueue(due: Omit<DueDelivery, 'attempt'>): Promise<void> {
    await this.#due.insertOne({ ...due, attempt: 1 })
  }

  /** The delivery is over once `attempt` ended (success, exhausted or dropped). */
  async finish(deliveryId: string, attempt: number): Promise<void> {
    await this.#due.deleteOne({ _id: deliveryId, attempt: { $lte: attempt } })
  }

  async dueBy(now: Date, limit: number): Promise<DueDelivery[]> {
    return this.#due.find({ due_at: { $lte: now } }).sort({ due_at: 1 }).limit(limit).toArray()
  }

  /** When the earliest delivery after `now` is due; null when none waits. */
  async nextDueAfter(now: Date): Promise<Date | null> {
    const [next] = await this.#due.find({ due_at: { $gt: now } }).sort({ due_at: 1 }).limit(1).toArray()
    return next?.due_at ?? null
  }

  /** The account's attempts, newest first. */
  async list(accountId: string, page: { limit: number; offset: number; commandId?: string | undefined }): Promise<AttemptRecord[]> {
    const filter: Filter<AttemptRecord> = { account_id: accountId }
    if (page.commandId) filter.command_id = page.commandId
    return this.#attempts.find(filter).sort({ finished_at: -1, logged_seq: -1 }).skip(page.offset).limit(page.limit).toArray()
  }
}
