/**
 * Whose turn it is: one small record per account that has commands waiting
 * for their hand-off, in the `dispatch_accounts` collection (read and written
 * here alone). The dispatcher claims the account served longest ago, takes
 * that account's oldest due command, and hands the account back at the end
 * of the line: round robin across accounts, first come first served within
 * one (docs/adr/0003-fair-dispatch.md).
 *
 *   state      'waiting' while the account may have commands to hand off,
 *              'idle' when the dispatcher found none;
 *   due_at     when the account may next be served: the time it was last
 *              served (so the earliest is the one served longest ago), a
 *              holder's lease end, or when a full account looks again;
 *   claim      the token of the dispatcher serving it now (null otherwise);
 *   submitted  bumped by every acceptance, so a dispatcher that found no
 *              command never retires an account a new one just arrived for.
 *
 * A claim is one conditional findOneAndUpdate, as in api/work-list.ts: one
 * dispatcher at a time serves an account, which is what keeps the count of
 * its commands in flight and the claim of its next command one step. The
 * record holds no count: commands in flight are counted on the commands
 * themselves, so a dispatcher that dies leaks nothing (its claim's lease ends).
 */
import { randomUUID } from 'node:crypto'
import type { Collection, Db } from 'mongodb'
import { isDuplicateKey } from '../store-compatibility.js'

const COLLECTION = 'dispatch_accounts'

export interface AccountScheduleDocument {
  _id: string
  state: 'waiting' | 'idle'
  due_at: Date
  claim: string | null
  submitted: number
}

/** An account this dispatcher serves until `leaseUntil`. */
export interface AccountTurn {
  accountId: string
  token: string
  leaseUntil: Date
  /** The acceptance count seen when the turn was taken. */
  submitted: number
  /** When the account was last served before this turn (its place in the line). */
  servedAt: Date
}

export class AccountSchedule {
  readonly #accounts: Collection<AccountScheduleDocument>

  constructor(db: Db) {
    this.#accounts = db.collection<AccountScheduleDocument>(COLLECTION)
  }

  /** "Whose turn is next" reads the waiting accounts only (a handful), on MongoDB and on the embedded store. */
  async ensureIndexes(): Promise<void> {
    await this.#accounts.createIndex({ state: 1, due_at: 1 })
  }

  /**
   * Says the account has work: called after its commands were inserted
   * (never before, so a dispatcher that sees the bump also sees the commands).
   * A new account joins the line at `now`; a known one keeps its place.
   */
  async enqueue(accountId: string, now: Date): Promise<void> {
    const write = () =>
      this.#accounts.findOneAndUpdate(
        { _id: accountId },
        { $set: { state: 'waiting' }, $inc: { submitted: 1 }, $setOnInsert: { due_at: now, claim: null } },
        // No projection: the embedded store's findAndModify does not take one.
        { upsert: true, returnDocument: 'after' },
      )
    let after: AccountScheduleDocument | null
    try {
      after = await write()
    } catch (error) {
      // Two first acceptances of one account raced on the upsert: the record exists now.
      if (!isDuplicateKey(error)) throw error
      after = await write()
    }
    // An account put off (its commands all in a backoff or held) is due at once for the new one.
    if (after && after.claim === null && after.due_at > now) await this.wake(accountId, now)
  }

  /**
   * Takes the account served longest ago among those due, for `leaseMs`;
   * null when none is due. Exactly one of any number of concurrent callers
   * gets a given account.
   */
  async claimNext(now: Date, leaseMs: number): Promise<AccountTurn | null> {
    const token = randomUUID()
    const leaseUntil = new Date(now.getTime() + leaseMs)
    const before = await this.#accounts.findOneAndUpdate(
      { state: 'waiting', due_at: { $lte: now } },
      { $set: { due_at: leaseUntil, claim: token } },
      { sort: { due_at: 1, _id: 1 }, returnDocument: 'before' },
    )
    if (!before) return null
    return { accountId: before._id, token, leaseUntil, submitted: before.submitted, servedAt: before.due_at }
  }

  /**
   * Ends a turn: the account is due again at `dueAt` (now, after it was
   * served: the end of the line; later, when it is full or its next command
   * is put off; `turn.servedAt`, when it was not served and keeps its place).
   * False when the turn's lease ran out and another dispatcher took it over.
   */
  async release(turn: AccountTurn, dueAt: Date): Promise<boolean> {
    const result = await this.#accounts.updateOne({ _id: turn.accountId, claim: turn.token }, { $set: { due_at: dueAt, claim: null } })
    return result.matchedCount === 1
  }

  /**
   * Ends a turn that found nothing due: the account is due again at `dueAt`
   * (when its next command is), unless a command was accepted for it since the
   * turn began; then it is due at once (that acceptance's wake found the turn
   * held and changed nothing).
   */
  async putOff(turn: AccountTurn, dueAt: Date, now: Date): Promise<void> {
    const result = await this.#accounts.updateOne({ _id: turn.accountId, claim: turn.token, submitted: turn.submitted }, { $set: { due_at: dueAt, claim: null } })
    if (result.matchedCount === 0) await this.release(turn, now)
  }

  /**
   * Ends a turn that found nothing to hand off: the account goes idle, keeping
   * its place, unless a command was accepted for it since the turn began;
   * then it stays waiting, due at once.
   */
  async retire(turn: AccountTurn, now: Date): Promise<void> {
    const result = await this.#accounts.updateOne(
      { _id: turn.accountId, claim: turn.token, submitted: turn.submitted },
      { $set: { state: 'idle', due_at: turn.servedAt, claim: null } },
    )
    if (result.matchedCount === 0) await this.release(turn, now)
  }

  /**
   * A slot of the account freed (one of its commands ended), or a command of
   * it was accepted: an account put off until later is due now. A no-op for
   * an account someone serves now (see putOff), or one not waiting.
   */
  async wake(accountId: string, now: Date): Promise<void> {
    await this.#accounts.updateOne({ _id: accountId, state: 'waiting', claim: null, due_at: { $gt: now } }, { $set: { due_at: now } })
  }

  /**
   * Whether a claim that found no account due should look again in a moment:
   * another dispatcher serves a turn now (its account comes back when the
   * turn ends, two queries later), or one comes due within `horizonMs` (a
   * turn that just ended is due at its holder's "now", which may be a little
   * later than the caller's).
   */
  async busy(now: Date, horizonMs: number): Promise<boolean> {
    const soon = now.getTime() + horizonMs
    const waiting = await this.#accounts.find({ state: 'waiting' }, { projection: { claim: 1, due_at: 1 } }).toArray()
    return waiting.some((doc) => doc.claim !== null || doc.due_at.getTime() <= soon)
  }

  /** The accounts waiting to be served (for the queue-depth gauge). */
  async waitingAccounts(): Promise<string[]> {
    const docs = await this.#accounts.find({ state: 'waiting' }, { projection: { _id: 1 } }).toArray()
    return docs.map((doc) => doc._id)
  }

  /** The earliest time any waiting account is due; null when none waits. */
  async nextDueAt(): Promise<Date | null> {
    const [next] = await this.#accounts.find({ state: 'waiting' }, { projection: { due_at: 1 } }).sort({ due_at: 1 }).limit(1).toArray()
    return next?.due_at ?? null
  }
}
