/**
 * Whose command goes next (docs/adr/0003-fair-dispatch.md): the account whose
 * turn it is (account-schedule.ts, round robin across the accounts with
 * waiting commands), if it has a slot free under its plan's limit, gives its
 * earliest due command (due-commands.ts). Taking the turn is one write that
 * also takes the slot; nothing is held between writes.
 */
import type { Plan } from '../accounts/plans.js'
import type { Clock } from '../clock.js'
import type { CommandDocument } from '../commands/command-document.js'
import type { CommandRepository } from '../commands/command-repository.js'
import type { Logger } from '../logger.js'
import type { Claim } from '../work-list.js'
import { newSlotHolder, slotTakenAt, type AccountSchedule, type AccountScheduleDocument } from './account-schedule.js'
import type { ConcurrencyLimits } from './concurrency-limits.js'

/** How many accounts one claim looks at before it answers none (each one full, taken by another dispatcher, or with nothing due). */
const MAX_TURNS_PER_CLAIM = 32

export interface AccountTurnsOptions {
  commands: CommandRepository
  now: Clock
  log: Logger
  /** How long a claimed command keeps other dispatchers away; a slot whose turn claimed nothing for this long is free again. */
  leaseMs: number
  /** How long a full account waits before it is looked at again, unless a command of it ends first. */
  fullRecheckMs: number
  /** Commands of one account in flight at once, by its plan; absent: no limit. */
  limits: ConcurrencyLimits | undefined
  /** The account's plan (null: unknown account, which gets the `free` plan's limit). */
  accountPlan: (accountId: string) => Promise<Plan | null>
}

export class AccountTurns {
  readonly #schedule: AccountSchedule

  constructor(private readonly options: AccountTurnsOptions) {
    this.#schedule = options.commands.schedule
  }

  /**
   * The next command to hand off, claimed: the earliest due command of the
   * account whose turn it is, if it has a slot free; null when no account
   * has one. Accounts that are full, or whose commands are all put off, are
   * put off in turn and the next one is looked at.
   */
  async next(): Promise<Claim<CommandDocument> | null> {
    for (let looked = 0; looked < MAX_TURNS_PER_CLAIM; looked++) {
      const now = this.options.now()
      const account = await this.#schedule.nextDue(now)
      if (!account) {
        if (await this.#announceMissing(now)) continue
        return null
      }
      const limit = await this.#limitOf(account._id)
      const holder = newSlotHolder(now)
      if (!(await this.#schedule.takeTurn(account, limit, holder))) {
        // Full, or another dispatcher took its turn first (then the next look finds where it is now).
        if (limit > 0 && (account.holders?.length ?? 0) >= limit) await this.#whenFull(account, limit, now)
        continue
      }
      const claim = await this.options.commands.due.claim(account._id, now, this.options.leaseMs, holder.token)
      if (claim) return claim
      await this.#schedule.endEmptyTurn(account, holder, await this.options.commands.nextDueForAccount(account._id))
    }
    return null
  }

  /**
   * A full account: slots whose holders died (a turn that never claimed, a
   * command whose end or put-off did not give its slot back) are freed and
   * the account is looked at again; with every slot live it waits until a
   * command of it ends (the terminal write wakes it: AccountSchedule#freeSlotOfEnded) or `fullRecheckMs` passed.
   */
  async #whenFull(account: AccountScheduleDocument, limit: number, now: Date): Promise<void> {
    const holders = account.holders ?? []
    const live = await this.options.commands.slotsHeld(holders, now)
    const stale = holders.filter((token) => !live.has(token) && slotTakenAt(token).getTime() + this.options.leaseMs <= now.getTime())
    if (stale.length > 0) await this.#schedule.freeSlots(account._id, stale)
    else await this.#schedule.putOffFull(account, limit, new Date(now.getTime() + this.options.fullRecheckMs))
  }

  /**
   * No account is due: one waiting command of an account the schedule does
   * not list as waiting (an API process died between a command's insert and
   * its account's announcement) has its account announced. True when one was.
   */
  async #announceMissing(now: Date): Promise<boolean> {
    const accountId = await this.options.commands.unannouncedAccount(await this.#schedule.waitingAccounts())
    if (accountId === null) return false
    this.options.log.warn({ account_id: accountId }, 'an account with waiting commands was missing from the schedule; added')
    await this.#schedule.enqueue(accountId, now)
    return true
  }

  async #limitOf(accountId: string): Promise<number> {
    if (!this.options.limits) return 0
    return this.options.limits[(await this.options.accountPlan(accountId)) ?? 'free']
  }
}
