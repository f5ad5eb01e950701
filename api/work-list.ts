/**
 * Work that waits on the record it is about: the one claim primitive of the
 * service. A record with work to do carries four top-level fields (their names
 * chosen per collection, e.g. `dispatch_state`, `dispatch_due_at`, …):
 *
 *   state     'waiting' until the work is done, then 'done';
 *   due_at    when the work may next be taken;
 *   claim     the token of whoever holds it now (null when nobody does);
 *   attempts  how many times it has been taken.
 *
 * A claim is one conditional findOneAndUpdate: "waiting and due" becomes
 * "due again when the lease ends, held by my token". Whoever holds the token
 * finishes the work or puts it off, each a write filtered on that token, so a
 * holder whose lease ran out (and whose work another took over) changes
 * nothing. A crash needs no recovery scan: the record is due again when the
 * lease ends. The state is a top-level equality so an index answers "what is
 * waiting" on MongoDB and on the embedded store alike (docs/adr/0001); the
 * due time is then compared on the waiting records only.
 */
import { randomUUID } from 'node:crypto'
import type { Collection, Document, Filter, OptionalUnlessRequiredId, UpdateFilter } from 'mongodb'
import { isDuplicateKey } from './store-compatibility.js'
import type { StoreIndexes } from './store-indexes.js'

/** The names of a collection's four work fields. */
export interface WorkFields {
  state: string
  dueAt: string
  claim: string
  attempts: string
}

export type WorkState = 'waiting' | 'done'

/** A record this caller holds until `leaseUntil`, and the token its later writes must show. */
export interface Claim<T> {
  doc: T
  token: string
  leaseUntil: Date
}

/** The work fields' values for a record that starts out waiting, due at `dueAt`. */
export function waitingFields(fields: WorkFields, dueAt: Date): Record<string, unknown> {
  return { [fields.state]: 'waiting', [fields.dueAt]: dueAt, [fields.claim]: null, [fields.attempts]: 0 }
}

export class WorkList<T extends Document & { _id: string }> {
  readonly #collection: Collection<T>
  readonly #fields: WorkFields

  constructor(collection: Collection<T>, fields: WorkFields) {
    this.#collection = collection
    this.#fields = fields
  }

  /**
   * The index that makes "what is waiting" a lookup rather than a scan, in
   * due order on MongoDB (the embedded store uses its first key and sorts
   * the waiting records itself).
   */
  async ensureIndexes(indexes: StoreIndexes): Promise<void> {
    await indexes.ensure(this.#collection, { [this.#fields.state]: 1 }, { [this.#fields.dueAt]: 1 })
  }

  /** The work fields of a record that starts out waiting (to spread into its insert). */
  waiting(dueAt: Date): Record<string, unknown> {
    return waitingFields(this.#fields, dueAt)
  }

  /**
   * Takes the earliest due record (matching `filter` too) for `leaseMs`,
   * with `set` applied; null when none is due. Exactly one of any number of concurrent callers
   * gets a given record.
   */
  async claimNext(now: Date, leaseMs: number, filter: Filter<T> = {}, set: Record<string, unknown> = {}): Promise<Claim<T> | null> {
    return this.#claim({ ...filter, [this.#fields.state]: 'waiting', [this.#fields.dueAt]: { $lte: now } } as Filter<T>, now, leaseMs, true, set)
  }

  /**
   * Takes one known record if it is waiting and due (and matches `filter`),
   * with `set` applied; null otherwise. A lookup by `_id`, so it costs the
   * same however many records wait.
   */
  async claimOne(id: string, now: Date, leaseMs: number, filter: Filter<T> = {}, set: Record<string, unknown> = {}): Promise<Claim<T> | null> {
    return this.#claim({ ...filter, _id: id, [this.#fields.state]: 'waiting', [this.#fields.dueAt]: { $lte: now } } as Filter<T>, now, leaseMs, false, set)
  }

  /**
   * The ids of the records (matching `filter` too) due at `now`, earliest
   * due first, at most `limit`; and, when none is, when the earliest waiting
   * one is due (nextDueAt's answer; null when nothing waits): one read for
   * both, as a claimer that found nothing asks next.
   */
  async dueIds(now: Date, limit: number, filter: Filter<T> = {}): Promise<{ due: string[]; nextDueAt: Date | null }> {
    const dueAt = this.#fields.dueAt
    const docs = await this.#collection
      .find({ ...filter, [this.#fields.state]: 'waiting' } as Filter<T>, { projection: { _id: 1, [dueAt]: 1 } })
      .sort({ [dueAt]: 1, _id: 1 })
      .limit(limit)
      .toArray()
    // In due order, so the due records come first and `limit` bounds them as it bounds the read.
    const due = docs.filter((doc) => (doc as Record<string, unknown>)[dueAt] as Date <= now).map((doc) => doc._id as string)
    const first = docs[0] as Record<string, unknown> | undefined
    return { due, nextDueAt: due.length === 0 && first ? (first[dueAt] as Date) : null }
  }

  /**
   * Ends the work: the record becomes 'done' with `set` applied, if the claim
   * still holds it. False when it does not (the lease ran out and another
   * holder took over): then nothing was written.
   */
  async finish(claim: Claim<T>, set: Record<string, unknown> = {}): Promise<boolean> {
    return this.#write(claim, { ...set, [this.#fields.state]: 'done', [this.#fields.claim]: null })
  }

  /**
   * Ends many claims in one write, each record getting the same `set` (work
   * that ends in bursts). Answers, per claim, whether its record is finished
   * by it (also when that claim had finished it before); false when another
   * holder had taken the record over, and then nothing was written to it.
   */
  async finishAll(claims: readonly Claim<T>[], set: Record<string, unknown> = {}): Promise<boolean[]> {
    if (claims.length === 0) return []
    // A token names one claim of one record, so "one of these ids, held by one of these
    // tokens" matches exactly the records these claims still hold.
    const filter = { _id: { $in: claims.map((claim) => claim.doc._id) }, [this.#fields.state]: 'waiting', [this.#fields.claim]: { $in: claims.map((claim) => claim.token) } } as Filter<T>
    const result = await this.#collection.updateMany(filter, { $set: { ...set, [this.#fields.state]: 'done', [this.#fields.claim]: null } } as UpdateFilter<T>)
    if (result.matchedCount === claims.length) return claims.map(() => true)
    // Some were not held. A record a claim finished was not taken again after that claim (and
    // never will be), so it still counts the takes the claim saw; a takeover counted one more.
    const { state, attempts } = this.#fields
    const stored = await this.#collection.find({ _id: { $in: claims.map((claim) => claim.doc._id) } } as Filter<T>, { projection: { [state]: 1, [attempts]: 1 } }).toArray()
    const byId = new Map<unknown, Record<string, unknown>>(stored.map((doc) => [doc._id, doc]))
    return claims.map((claim) => {
      const doc = byId.get(claim.doc._id)
      return doc?.[state] === 'done' && doc[attempts] === (claim.doc as Record<string, unknown>)[attempts]
    })
  }

  /** Puts the work off until `dueAt` (a retry, a backoff) with `set` applied, if the claim still holds it. */
  async putOff(claim: Claim<T>, dueAt: Date, set: Record<string, unknown> = {}): Promise<boolean> {
    return this.#write(claim, { ...set, [this.#fields.dueAt]: dueAt, [this.#fields.claim]: null })
  }

  /** Keeps holding the record for another `leaseMs` (long work); false when the claim was lost. */
  async extend(claim: Claim<T>, now: Date, leaseMs: number): Promise<boolean> {
    const leaseUntil = new Date(now.getTime() + leaseMs)
    const extended = await this.#write(claim, { [this.#fields.dueAt]: leaseUntil })
    if (extended) claim.leaseUntil = leaseUntil
    return extended
  }

  /**
   * Creates a record already held by the caller, for work its creator starts
   * at once (a webhook's first attempt): one insert rather than an insert and
   * a claim. `record` holds the record's own fields, not the work fields;
   * `insert` (an insertOne by default; e.g. a batched one) answers false when
   * the `_id` is taken. Null then: whoever created that record has the work.
   */
  async insertClaimed(
    record: Record<string, unknown> & { _id: string },
    now: Date,
    leaseMs: number,
    insert: (doc: T) => Promise<boolean> = (doc) => this.#insertOne(doc),
  ): Promise<Claim<T> | null> {
    const token = randomUUID()
    const leaseUntil = new Date(now.getTime() + leaseMs)
    const doc = { ...record, [this.#fields.state]: 'waiting', [this.#fields.dueAt]: leaseUntil, [this.#fields.claim]: token, [this.#fields.attempts]: 1 } as T
    return (await insert(doc)) ? { doc, token, leaseUntil } : null
  }

  /** When the earliest waiting record (matching `filter` too) is due (a held one: when its lease ends); null when nothing waits. */
  async nextDueAt(filter: Filter<T> = {}): Promise<Date | null> {
    const [next] = await this.#collection
      .find({ ...filter, [this.#fields.state]: 'waiting' } as Filter<T>, { projection: { [this.#fields.dueAt]: 1 } })
      .sort({ [this.#fields.dueAt]: 1 })
      .limit(1)
      .toArray()
    return next ? ((next as Record<string, unknown>)[this.#fields.dueAt] as Date) : null
  }

  async #claim(filter: Filter<T>, now: Date, leaseMs: number, sorted: boolean, set: Record<string, unknown> = {}): Promise<Claim<T> | null> {
    const token = randomUUID()
    const leaseUntil = new Date(now.getTime() + leaseMs)
    const update = { $set: { ...set, [this.#fields.dueAt]: leaseUntil, [this.#fields.claim]: token }, $inc: { [this.#fields.attempts]: 1 } } as unknown as UpdateFilter<T>
    const doc = await this.#collection.findOneAndUpdate(filter, update, {
      returnDocument: 'after',
      ...(sorted ? { sort: { [this.#fields.dueAt]: 1, _id: 1 } } : {}),
    })
    return doc ? { doc: doc as T, token, leaseUntil } : null
  }

  async #insertOne(doc: T): Promise<boolean> {
    try {
      await this.#collection.insertOne(doc as OptionalUnlessRequiredId<T>)
      return true
    } catch (error) {
      if (isDuplicateKey(error)) return false
      throw error
    }
  }

  /** Every write after a claim is filtered on its token: a holder that lost the record writes nothing. */
  async #write(claim: Claim<T>, set: Record<string, unknown>): Promise<boolean> {
    const filter = { _id: claim.doc._id, [this.#fields.state]: 'waiting', [this.#fields.claim]: claim.token } as Filter<T>
    const result = await this.#collection.updateOne(filter, { $set: set } as UpdateFilter<T>)
    return result.matchedCount === 1
  }
}
