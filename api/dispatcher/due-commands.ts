/**
 * The commands of each account this process last read as due, in the
 * order it takes them (one per process: CommandRepository#due): an account's claims then go by id, one write found by
 * `_id` each, instead of each claim finding the account's earliest due
 * command again. On MongoDB that finding walks an index; on the embedded store
 * it reads every waiting command of the account, since the embedded store compares
 * dates and sorts after reading (api/store-compatibility.ts): a burst of n commands from one account cost
 * ~n²/2 record reads, 33 ms a claim at 200 waiting and 149 ms at 1,000
 * (docs/benchmarks/fair-dispatch.md).
 *
 * Most accounts have one command due at a time, so a hint is read only for an
 * account claimed twice in a row: its first claim is the one conditional
 * "earliest due" write it always was, and a second claim, before one has come
 * back empty, reads the backlog's ids. A lone command costs what it did.
 *
 * What it holds is a hint, never the truth. Each claim is the conditional
 * write it always was (this account's, waiting, due), so an id another
 * dispatcher took, or that was put off or cancelled meanwhile, is passed
 * over. The account is read again when its known ids run out, or after
 * MAX_MISSES ids in a row were gone (another dispatcher is serving it), so
 * a stale hint costs a few writes, not one per id. Commands accepted after
 * the read are due after every id it returned, so the account's commands are
 * still taken first come, first served.
 *
 * Claims of one account wait for each other in this process: several turns
 * of an account may be served at once (each took its own slot), and their
 * claims, sent together, could come back out of order and reach the
 * executor in another order than the one they were taken in.
 */
import type { Claim } from '../work-list.js'
import type { CommandDocument } from '../commands/command-document.js'
import type { CommandRepository } from '../commands/command-repository.js'

/** Ids read at once per account: bounds the hint's memory; the rest are read when these run out. */
const READ_AT_MOST = 1_000
/** Known ids found gone in a row before the account is read again. */
const MAX_MISSES = 2

export class DueCommands {
  readonly #known = new Map<string, string[]>()
  /** Accounts whose last claim found a command: another claim of them means a backlog. */
  readonly #claimedLast = new Set<string>()
  /** Per account whose last read found nothing due: when its earliest waiting command is due (null: none waits), for nextDueAt. */
  readonly #nextDue = new Map<string, Date | null>()
  /** Per account, the claim in progress in this process (settled to nothing), which the next one waits for. */
  readonly #claiming = new Map<string, Promise<unknown>>()

  constructor(
    private readonly commands: Pick<CommandRepository, 'claimForAccount' | 'claimOneForAccount' | 'dueForAccount' | 'nextDueForAccount'>,
    private readonly readAtMost = READ_AT_MOST,
  ) {}

  /** The account's earliest due command, claimed for `leaseMs` in the slot `slot`; null when none is due. */
  async claim(accountId: string, now: Date, leaseMs: number, slot: string): Promise<Claim<CommandDocument> | null> {
    const claiming = (this.#claiming.get(accountId) ?? Promise.resolve()).then(() => this.#claimInTurn(accountId, now, leaseMs, slot))
    const settled = claiming.catch(() => undefined)
    this.#claiming.set(accountId, settled)
    try {
      return await claiming
    } finally {
      if (this.#claiming.get(accountId) === settled) this.#claiming.delete(accountId)
    }
  }

  async #claimInTurn(accountId: string, now: Date, leaseMs: number, slot: string): Promise<Claim<CommandDocument> | null> {
    // An answer of an earlier claim that nothing asked for is never taken for this one's.
    this.#nextDue.delete(accountId)
    const known = await this.#claimKnown(accountId, now, leaseMs, slot)
    if (known !== 'read again') return known
    if (!this.#claimedLast.has(accountId)) {
      const claim = await this.commands.claimForAccount(accountId, now, leaseMs, slot)
      if (claim) this.#claimedLast.add(accountId)
      return claim
    }
    const { due, nextDueAt } = await this.commands.dueForAccount(accountId, now, this.readAtMost)
    this.#known.set(accountId, due)
    const read = await this.#claimKnown(accountId, now, leaseMs, slot, Infinity)
    if (read !== 'read again') return read
    this.#claimedLast.delete(accountId)
    // Nothing was due: the turn that asked ends, and asks next when the account's next command is due.
    if (due.length === 0) this.#nextDue.set(accountId, nextDueAt)
    return null
  }

  /**
   * When the account's earliest waiting command is due (null: none waits),
   * for a turn whose claim found nothing: from that claim's read when it
   * made one (ending the turn is conditional on no acceptance since the
   * account was read: AccountSchedule#endEmptyTurn), else read now.
   */
  async nextDueAt(accountId: string): Promise<Date | null> {
    const read = this.#nextDue.get(accountId)
    this.#nextDue.delete(accountId)
    return read !== undefined ? read : this.commands.nextDueForAccount(accountId)
  }

  async #claimKnown(accountId: string, now: Date, leaseMs: number, slot: string, maxMisses = MAX_MISSES): Promise<Claim<CommandDocument> | null | 'read again'> {
    const ids = this.#known.get(accountId) ?? []
    let misses = 0
    while (ids.length > 0 && misses < maxMisses) {
      const claim = await this.commands.claimOneForAccount(ids.shift() as string, accountId, now, leaseMs, slot)
      if (claim) {
        if (ids.length === 0) this.#known.delete(accountId)
        return claim
      }
      misses += 1
    }
    this.#known.delete(accountId)
    return 'read again'
  }
}
