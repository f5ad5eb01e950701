/**
 * Whose command goes next (docs/adr/0003-fair-dispatch.md): the account whose
 * turn it is (account-schedule.ts, round robin across the accounts with
 * waiting commands), if it has a slot free under its plan's limit, gives its
 * earliest due command (due-commands.ts); the account goes back in line
 * either way.
 */
import type { Plan } from '../accounts/plans.js'
import type { Clock } from '../clock.js'
import type { CommandDocument } from '../commands/command-document.js'
import type { CommandRepository } from '../commands/command-repository.js'
import type { Claim } from '../work-list.js'
import type { AccountSchedule, AccountTurn } from './account-schedule.js'
import type { ConcurrencyLimits } from './concurrency-limits.js'
import { DueCommands } from './due-commands.js'

/** How many accounts one claim looks at before it ends the round (each one full or with nothing due). */
const MAX_TURNS_PER_CLAIM = 32
/** An account due within this long is as good as due: the clocks of two dispatchers' writes differ by about this much. */
const BUSY_HORIZON_MS = 50

/**
 * A claimed command, and the release of the account's turn that served it,
 * under way beside the hand-off: a store round trip off every command's way
 * to its runner. It settles to the release's error, or null; the hand-off
 * waits for it before it records its outcome.
 */
export interface Served {
  claim: Claim<CommandDocument>
  turnReleased: Promise<unknown>
}

export interface AccountTurnsOptions {
  commands: CommandRepository
  now: Clock
  /** How long a claimed command keeps other dispatchers away. */
  leaseMs: number
  /** How long serving one account's turn keeps other dispatchers off it; longer than a count and a claim take. */
  turnLeaseMs: number
  /** How long a full account waits before it is looked at again, unless a command of it ends first. */
  fullRecheckMs: number
  /** Commands of one account in flight at once, by its plan; absent: no limit. */
  limits: ConcurrencyLimits | undefined
  /** The account's plan (null: unknown account, which gets the `free` plan's limit). */
  accountPlan: (accountId: string) => Promise<Plan | null>
}

export class AccountTurns {
  readonly #schedule: AccountSchedule
  /** Which of an account's commands are due, from one read per burst rather than one per claim. */
  readonly #due: DueCommands

  constructor(private readonly options: AccountTurnsOptions) {
    this.#schedule = options.commands.schedule
    this.#due = new DueCommands(options.commands)
  }

  /**
   * The next command to hand off: the earliest due command of the account
   * whose turn it is, if it has a slot free; null when no account has one
   * due; 'busy' when none is due but another dispatcher serves an account
   * now. Accounts that are full, or whose commands are all put off, are
   * handed back and the next one is looked at.
   */
  async next(): Promise<Served | 'busy' | null> {
    for (let looked = 0; looked < MAX_TURNS_PER_CLAIM; looked++) {
      const turn = await this.#schedule.claimNext(this.options.now(), this.options.turnLeaseMs)
      if (!turn) return (await this.#schedule.busy(this.options.now(), BUSY_HORIZON_MS)) ? 'busy' : null
      const claim = await this.#serve(turn)
      if (claim) return claim
    }
    return null
  }

  /** One account's turn: its next command if it has a slot free and one due; the account goes back in line either way. */
  async #serve(turn: AccountTurn): Promise<Served | null> {
    const { accountId } = turn
    const limit = await this.#limitOf(accountId)
    if (limit > 0) {
      const running = await this.options.commands.inFlight(accountId, this.options.now())
      if (running >= limit) {
        // Keeps its place: a command of it ending wakes it (commandEnded), else it looks again after fullRecheckMs.
        await this.#schedule.release(turn, new Date(this.options.now().getTime() + this.options.fullRecheckMs))
        return null
      }
    }
    const claim = await this.#due.claim(accountId, this.options.now(), this.options.leaseMs)
    if (claim) {
      // Served: to the end of the line. Settled to its error at once, so a failure is never an unhandled rejection.
      const turnReleased = this.#schedule.release(turn, this.options.now()).then(
        () => null,
        (err: unknown) => err ?? new Error('the turn release failed'),
      )
      return { claim, turnReleased }
    }
    const nextDue = await this.options.commands.nextDueForAccount(accountId)
    // Due again when its next command is (a backoff, or a held one's lease, which ends if its holder died).
    await (nextDue ? this.#schedule.putOff(turn, nextDue, this.options.now()) : this.#schedule.retire(turn, this.options.now()))
    return null
  }

  async #limitOf(accountId: string): Promise<number> {
    if (!this.options.limits) return 0
    return this.options.limits[(await this.options.accountPlan(accountId)) ?? 'free']
  }
}
