import type { Collection, Db } from 'mongodb'
import { WorkList, type Claim, type WorkFields, type WorkState } from '../work-list.js'
import { StoreIndexes } from '../store-indexes.js'
import { insertEach, PerTurnBatch } from './batched-writes.js'

/**
 * The deliveries (`webhook_deliveries`): one record per delivery, a
 * completion or a redelivery the API queued, with the attempt to make next.
 * It is a work list (api/work-list.ts): a deliverer claims a delivery, makes
 * its attempt, then ends it or puts it off to the next attempt's due time, each
 * write filtered on its claim. Only the holder sends, so each attempt goes out
 * once across replicas; a holder that stopped loses the delivery when its
 * lease ends, and another replica takes it over.
 */

/** The identity of one delivery: one completion (or one redeliver request) of one command. */
export interface DeliveryRef {
  deliveryId: string
  commandId: string
  accountId: string
}

/** How a delivery ended: a 2xx, eight failures, or nothing left to deliver to. */
export type DeliveryOutcome = 'delivered' | 'exhausted' | 'dropped'

export interface DeliveryDocument {
  /** The delivery id, sent as X-Webhook-Id. */
  _id: string
  command_id: string
  account_id: string
  /** The attempt to make next, 1-based. */
  attempt: number
  /**
   * `claims` when `attempt` was scheduled. One claim later is the attempt's
   * own; any more means a holder stopped during it (see startedBefore).
   */
  claims_at_schedule: number
  outcome: DeliveryOutcome | null
  created_at: Date
  finished_at: Date | null
  /** Work fields (api/work-list.ts). */
  state: WorkState
  due_at: Date
  claim: string | null
  claims: number
}

export type HeldDelivery = Claim<DeliveryDocument>

const WORK_FIELDS: WorkFields = { state: 'state', dueAt: 'due_at', claim: 'claim', attempts: 'claims' }

/** The delivery's own fields when it starts, at attempt 1. */
function newDelivery(ref: DeliveryRef, now: Date) {
  return {
    _id: ref.deliveryId,
    command_id: ref.commandId,
    account_id: ref.accountId,
    attempt: 1,
    claims_at_schedule: 0,
    outcome: null,
    created_at: now,
    finished_at: null,
  }
}

export function deliveryRef(doc: DeliveryDocument): DeliveryRef {
  return { deliveryId: doc._id, commandId: doc.command_id, accountId: doc.account_id }
}

/**
 * True when an earlier holder took this attempt and lost it without putting
 * it off: it may have been sent, so the receiver may have it.
 */
export function startedBefore(doc: DeliveryDocument): boolean {
  return doc.claims > doc.claims_at_schedule + 1
}

export class DeliveryRepository {
  readonly #deliveries: Collection<DeliveryDocument>
  readonly #list: WorkList<DeliveryDocument>
  readonly #indexes: StoreIndexes
  readonly #inserts: PerTurnBatch<DeliveryDocument, boolean>
  readonly #ends: PerTurnBatch<{ held: HeldDelivery; outcome: DeliveryOutcome; now: Date }, boolean>

  constructor(db: Db) {
    this.#deliveries = db.collection('webhook_deliveries')
    this.#list = new WorkList(this.#deliveries, WORK_FIELDS)
    this.#indexes = new StoreIndexes(db)
    // A burst of completions creates its deliveries, and ends them, a batch at a time.
    this.#inserts = new PerTurnBatch((docs) => insertEach(this.#deliveries, docs))
    this.#ends = new PerTurnBatch((ends) => this.#endAll(ends))
  }

  async ensureIndexes(): Promise<void> {
    await this.#list.ensureIndexes(this.#indexes)
  }

  /** A completion's delivery, held by the caller for its first attempt; null when it exists already (a repeated event). */
  async startHeld(ref: DeliveryRef, now: Date, leaseMs: number): Promise<HeldDelivery | null> {
    return this.#list.insertClaimed(newDelivery(ref, now), now, leaseMs, (doc) => this.#inserts.add(doc))
  }

  /** A redelivery: a new delivery, attempt 1 due now, for whichever deliverer looks first. */
  async enqueue(ref: DeliveryRef, now: Date): Promise<void> {
    await this.#deliveries.insertOne({ ...newDelivery(ref, now), ...this.#list.waiting(now) } as DeliveryDocument)
  }

  /** The earliest due delivery, held for `leaseMs`; null when none is due. */
  async claimNext(now: Date, leaseMs: number): Promise<HeldDelivery | null> {
    return this.#list.claimNext(now, leaseMs)
  }

  /** Attempt `held.doc.attempt` failed: the next one is due at `dueAt`. False when the claim was lost. */
  async scheduleNext(held: HeldDelivery, dueAt: Date): Promise<boolean> {
    return this.#list.putOff(held, dueAt, { attempt: held.doc.attempt + 1, claims_at_schedule: held.doc.claims })
  }

  /** The attempt was not made (it could not be prepared): the same attempt, later. */
  async retryLater(held: HeldDelivery, dueAt: Date): Promise<boolean> {
    return this.#list.putOff(held, dueAt, { claims_at_schedule: held.doc.claims })
  }

  /** The delivery is over. False when the claim was lost. */
  async end(held: HeldDelivery, outcome: DeliveryOutcome, now: Date): Promise<boolean> {
    return this.#ends.add({ held, outcome, now })
  }

  /** One write per outcome for a batch of ends (they share a turn of the event loop, so a time too). */
  async #endAll(ends: { held: HeldDelivery; outcome: DeliveryOutcome; now: Date }[]): Promise<boolean[]> {
    const answers = new Map<HeldDelivery, boolean>()
    for (const outcome of ['delivered', 'exhausted', 'dropped'] as const) {
      const group = ends.filter((end) => end.outcome === outcome)
      if (group.length === 0) continue
      const kept = await this.#list.finishAll(group.map((end) => end.held), { outcome, finished_at: group[0]!.now })
      group.forEach((end, index) => answers.set(end.held, kept[index]!))
    }
    return ends.map((end) => answers.get(end.held)!)
  }

  /** When the earliest unfinished delivery is due (a held one: when its lease ends); null when every delivery is over. */
  async nextDueAt(): Promise<Date | null> {
    return this.#list.nextDueAt()
  }
}
