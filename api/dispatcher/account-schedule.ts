/**
 * Whose turn it is: one small record per account that has commands waiting
 * for their hand-off, in the `dispatch_accounts` collection (read and written
 * here alone). The dispatcher takes the account served longest ago, takes
 * that account's oldest due command, and the account is at the end of the
 * line in the same write that gave it its turn: round robin across accounts,
 * first come first served within one (docs/adr/0003-fair-dispatch.md).
 *
 *   state      'waiting' while the account may have commands to hand off,
 *              'idle' when the dispatcher found none;
 *   due_at     when the account may next be served: the time it was last
 *              served (so the earliest is the one served longest ago), or
 *              when a full or put-off account looks again;
 *   submitted  bumped by every acceptance, so a turn that found no command
 *              never retires an account a new one just arrived for;
 *   holders    the slots of the account's plan limit taken now (absent
 *              until one is), one token per command between the turn that
 *              took it and the command's end; a token says when it was taken.
 *
 * A turn is one conditional write that expects the account as it was read
 * (its `due_at`) and, for an account with a limit, a free slot (`holders`
 * shorter than the limit): it moves the account to the end of the line and
 * takes the slot at once, so two dispatchers never both see one slot free
 * and no turn is held between writes. A slot is given back by the write that
 * ends what holds it (an empty turn, a failed hand-off, the command's
 * terminal status); a holder whose writer died is found stale when the
 * account looks full (Dispatcher#whenFull), so a crash leaks no slot.
 */
import { randomUUID } from 'node:crypto'
import type { Collection, Db } from 'mongodb'
import { isDuplicateKey } from '../store-compatibility.js'
import { StoreIndexes } from '../store-indexes.js'

const COLLECTION = 'dispatch_accounts'

/**
 * One slot of an account's limit, taken by a turn at `since`; the command
 * claimed in that turn carries its token (`dispatch_slot`). The token is a
 * string that starts with `since` (a plain value is what both stores can
 * $pull and index).
 */
export interface SlotHolder {
  token: string
  since: Date
}

export function newSlotHolder(since: Date): SlotHolder {
  return { token: `${since.getTime()}:${randomUUID()}`, since }
}

/** When the slot with this token was taken. */
export function slotTakenAt(token: string): Date {
  return new Date(Number(token.slice(0, token.indexOf(':'))))
}

export interface AccountScheduleDocument {
  _id: string
  state: 'waiting' | 'idle'
  due_at: Date
  submitted: number
  holders?: string[]
}

export class AccountSchedule {
  readonly #accounts: Collection<AccountScheduleDocument>
  readonly #indexes: StoreIndexes

  constructor(db: Db) {
    this.#accounts = db.collection<AccountScheduleDocument>(COLLECTION)
    this.#indexes = new StoreIndexes(db)
  }

  /** "Whose turn is next" reads the waiting accounts only (a handful), on MongoDB and on the embedded store. */
  async ensureIndexes(): Promise<void> {
    await this.#indexes.ensure(this.#accounts, { state: 1 }, { due_at: 1 })
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
        { $set: { state: 'waiting' }, $inc: { submitted: 1 }, $setOnInsert: { due_at: now } },
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
    // An account put off (full, or its commands all in a backoff or held) is due at once for the new one.
    if (after && after.due_at > now) await this.wake(accountId, now)
  }

  /** The account served longest ago among those due at `now`; null when none is. */
  async nextDue(now: Date): Promise<AccountScheduleDocument | null> {
    const [next] = await this.#accounts.find({ state: 'waiting', due_at: { $lte: now } }).sort({ due_at: 1, _id: 1 }).limit(1).toArray()
    return next ?? null
  }

  /**
   * The account's turn, if it is still as `seen` (nobody took a turn of it
   * since) and, with a `limit` (0: none), has a slot free: the account goes
   * to the end of the line and `holder` takes a slot, in one write. False
   * when either did not hold.
   */
  async takeTurn(seen: AccountScheduleDocument, limit: number, holder: SlotHolder): Promise<boolean> {
    const free = limit > 0 ? { [`holders.${limit - 1}`]: { $exists: false } } : {}
    const take = limit > 0 ? { $push: { holders: holder.token } } : {}
    const result = await this.#accounts.updateOne({ _id: seen._id, state: 'waiting', due_at: seen.due_at, ...free }, { $set: { due_at: holder.since }, ...take })
    return result.matchedCount === 1
  }

  /**
   * Ends a turn that found no command due: gives its slot back and the
   * account is due again at `nextDue` (its next command's backoff or
   * lease end), or idle in its old place when it has none; unless a command
   * was accepted (or a failed hand-off announced again) since the account
   * was read: then it stays due.
   */
  async endEmptyTurn(seen: AccountScheduleDocument, holder: SlotHolder, nextDue: Date | null): Promise<void> {
    const after: Partial<AccountScheduleDocument> = nextDue ? { due_at: nextDue } : { state: 'idle', due_at: seen.due_at }
    const ended = await this.#accounts.updateOne(
      { _id: seen._id, state: 'waiting', submitted: seen.submitted },
      { $set: after, $pull: { holders: holder.token } },
    )
    if (ended.matchedCount === 0) await this.freeSlots(seen._id, [holder.token])
  }

  /**
   * Puts a full account off until `until`, if it is still as `seen` and
   * still full: a slot freed since (and its wake) is never undone.
   */
  async putOffFull(seen: AccountScheduleDocument, limit: number, until: Date): Promise<void> {
    await this.#accounts.updateOne({ _id: seen._id, state: 'waiting', due_at: seen.due_at, [`holders.${limit - 1}`]: { $exists: true } }, { $set: { due_at: until } })
  }

  /**
   * Gives back the slot an ended command held and wakes its account, in one
   * write: an account put off (full) is due at `now` at the latest. An idle
   * account's `due_at` (when it was last served) is already past, so `$min`
   * leaves its place in line as it was.
   */
  async freeSlotOfEnded(accountId: string, token: string, now: Date): Promise<void> {
    await this.#accounts.updateOne({ _id: accountId }, { $pullAll: { holders: [token] }, $min: { due_at: now } })
  }

  /** Gives back the slots these turns took (their commands were put off, or their holders died). */
  async freeSlots(accountId: string, tokens: readonly string[]): Promise<void> {
    await this.#accounts.updateOne({ _id: accountId }, { $pullAll: { holders: [...tokens] } })
  }

  /**
   * A slot of the account freed (one of its commands ended), or a command of
   * it was accepted: an account put off until later is due now. A no-op for
   * an account not waiting or already due.
   */
  async wake(accountId: string, now: Date): Promise<void> {
    await this.#accounts.updateOne({ _id: accountId, state: 'waiting', due_at: { $gt: now } }, { $set: { due_at: now } })
  }

  /** The accounts waiting to be served (for the queue-depth gauge and the search for unannounced ones). */
  async waitingAccounts(): Promise<string[]> {
    const docs = await this.#accounts.find({ state: 'waiting' }, { projection: { _id: 1 } }).toArray()
    return docs.map((doc) => doc._id)
  }
}
