import { setTimeout as delay } from 'node:timers/promises'
import { systemClock, type Clock, type Sleep } from '../clock.js'
import { toCommandSpec, type CommandDocument } from '../commands/command-document.js'
import type { CommandRepository } from '../commands/command-repository.js'
import type { Plan } from '../accounts/plans.js'
import type { Executor } from '../executors/executor.js'
import type { Logger } from '../logger.js'
import type { DispatchRecorder } from '../metrics/service-metrics.js'
import { PollingLoop } from '../polling-loop.js'
import type { WorkList } from '../work-list.js'
import type { AccountSchedule } from './account-schedule.js'
import { AccountTurns, type Served } from './account-turns.js'
import { dispatchBackoffMs } from './backoff.js'
import type { ConcurrencyLimits } from './concurrency-limits.js'

/**
 * A turn is held for two queries (a count and a claim): a claim that finds
 * every account with work in another dispatcher's turn waits this long and
 * looks again, at most MAX_BUSY_WAITS times in a row (a holder that died
 * keeps its account until its turn's lease ends).
 */
const BUSY_WAIT_MS = 2
const MAX_BUSY_WAITS = 200

export interface DispatcherOptions {
  /** The commands, their hand-offs (`dispatch`) and the accounts' turns (`schedule`). */
  commands: CommandRepository
  executor: Executor
  logger: Logger
  now?: Clock
  sleep?: Sleep
  /** How often to look for due commands when nothing nudges it. */
  pollIntervalMs?: number
  /** How often to look for accounts with waiting commands that the schedule misses (see repair); once at start, then rarely. */
  repairIntervalMs?: number
  /** How long a claim keeps other dispatchers away; longer than any hand-off takes. */
  leaseMs?: number
  backoffMs?: (attempts: number) => number
  /** Hand-offs in flight at once. */
  concurrency?: number
  metrics?: DispatchRecorder
  /** Commands of one account in flight at once, by its plan; absent: no limit. */
  concurrencyLimits?: ConcurrencyLimits
  /** The account's plan (null: unknown account, which gets the `free` plan's limit). */
  accountPlan?: (accountId: string) => Promise<Plan | null>
  /** How long a full account waits before it is looked at again, unless a command of it ends first (see commandEnded). */
  fullRecheckMs?: number
  /** How long serving one account's turn keeps other dispatchers off it; longer than a count and a claim take. */
  turnLeaseMs?: number
}

/**
 * The outbox's consumer. A command record is inserted waiting for its
 * hand-off (api/work-list.ts); the dispatcher takes the account whose turn it
 * is (api/dispatcher/account-schedule.ts: round robin across the accounts
 * with waiting commands), and, if the account has a slot free under its
 * plan's limit, claims that account's earliest due command,
 * hands its spec to the executor, and marks it done, or puts it off with a
 * backoff when the executor failed. A claim is a lease: if this process dies
 * mid-hand-off, the record is due again when the lease ends and another
 * dispatcher (or this one, restarted) takes it, so nothing accepted is lost
 * and no recovery scan is needed. The executor's idempotence covers the one
 * overlap left: a crash after the hand-off, before the record was marked done.
 */
export class Dispatcher {
  readonly #commands: CommandRepository
  /** Whose command goes next: the accounts' turns, within their plans' limits. */
  readonly #turns: AccountTurns
  readonly #outbox: WorkList<CommandDocument>
  readonly #executor: Executor
  readonly #log: Logger
  readonly #now: Clock
  readonly #polling: PollingLoop
  readonly #leaseMs: number
  readonly #backoffMs: (attempts: number) => number
  readonly #concurrency: number
  readonly #metrics: DispatchRecorder | undefined
  readonly #schedule: AccountSchedule
  /** Hand-offs of this process between their claim and the executor's answer: slots of the executor already promised. */
  #handing = 0

  constructor(options: DispatcherOptions) {
    this.#commands = options.commands
    this.#outbox = this.#commands.dispatch
    this.#executor = options.executor
    this.#log = options.logger.child({ component: 'dispatcher', executor: options.executor.name })
    this.#now = options.now ?? systemClock
    // The loop's periodic "recover" step is the schedule's repair: a crashed hand-off needs none (its lease ends).
    this.#polling = new PollingLoop(
      { recover: () => this.repair(), drain: () => this.drain() },
      {
        pollIntervalMs: options.pollIntervalMs ?? 1_000,
        recoveryIntervalMs: options.repairIntervalMs ?? 300_000,
        ...(options.sleep ? { sleep: options.sleep } : {}),
        log: this.#log,
        // MongoDB unreachable: the next poll retries.
        roundFailed: 'dispatch round failed',
      },
    )
    this.#leaseMs = options.leaseMs ?? 60_000
    this.#backoffMs = options.backoffMs ?? dispatchBackoffMs
    this.#concurrency = options.concurrency ?? 4
    this.#metrics = options.metrics
    this.#schedule = this.#commands.schedule
    this.#turns = new AccountTurns({
      commands: this.#commands,
      now: this.#now,
      leaseMs: this.#leaseMs,
      turnLeaseMs: options.turnLeaseMs ?? 30_000,
      fullRecheckMs: options.fullRecheckMs ?? options.pollIntervalMs ?? 1_000,
      limits: options.concurrencyLimits,
      accountPlan: options.accountPlan ?? (async () => null),
    })
    // A run that ended frees a slot of an executor that queues: the next command may go now.
    options.executor.onSlotFreed?.(() => this.nudge())
  }

  /** Starts polling; idempotent. */
  start(): void {
    if (this.#polling.running) return
    this.#polling.start()
    this.#log.info('dispatcher started')
  }

  /** Stops polling and waits for hand-offs in flight; a command it leaves claimed is retaken when its lease ends. */
  async stop(): Promise<void> {
    if (!this.#polling.running) return
    await this.#polling.stop()
    this.#log.info('dispatcher stopped')
  }

  /**
   * Tells a running dispatcher that work was just recorded (or a slot of the
   * executor freed), so it looks now instead of at its next poll. It names
   * no command: claiming by id would serve whoever submitted last before the
   * accounts whose turn it is. Finding the next account costs a read of the
   * waiting accounts, not of the waiting commands.
   */
  nudge(): void {
    if (!this.#polling.running) return
    this.#polling.nudge()
  }

  /**
   * A command of the account ended (the status projector saw it): if the
   * account was full, it is due again now rather than at its next look.
   */
  async commandEnded(accountId: string): Promise<void> {
    await this.#schedule.wake(accountId, this.#now())
    this.nudge()
  }

  /**
   * Announces the accounts with waiting commands that the schedule misses (an
   * API process died between a command's insert and its account's bump); run
   * at start and then every `repairIntervalMs`. Returns how many it announced.
   */
  async repair(): Promise<number> {
    const announced = await this.#commands.repairSchedule(this.#now())
    if (announced > 0) this.#log.warn({ accounts: announced }, 'accounts with waiting commands were missing from the schedule; added')
    return announced
  }

  /**
   * Hands off every due command, up to `concurrency` at a time; returns how
   * many were handed off. A worker joins with each claim, so an idle poll
   * costs one claim and a burst fills every slot; the first claim that finds
   * nothing due ends the round for all (what falls due later comes with a
   * nudge or the next poll). A claim that meets only accounts in other
   * dispatchers' turns looks again in a moment rather than ending the round.
   */
  async drain(): Promise<number> {
    let handed = 0
    let exhausted = false
    const failures: unknown[] = []
    const workers: Array<Promise<void>> = []
    const work = async (): Promise<void> => {
      let busyWaits = 0
      while (!exhausted && !(this.#polling.stopping && this.#polling.running)) {
        const served = await this.#claim()
        if (served === 'busy' && busyWaits++ < MAX_BUSY_WAITS) {
          await delay(BUSY_WAIT_MS)
          continue
        }
        if (served === null || served === 'busy') {
          exhausted = true
          return
        }
        busyWaits = 0
        if (workers.length < this.#concurrency) startWorker()
        if (await this.#handOff(served)) handed += 1
      }
    }
    // A worker that fails (MongoDB unreachable) ends the round; the others finish their hand-offs first.
    const startWorker = () =>
      workers.push(
        work().catch((err: unknown) => {
          failures.push(err)
          exhausted = true
        }),
      )
    startWorker()
    // A worker starts its successor before it ends, so this sees every worker of the round.
    for (let i = 0; i < workers.length; i++) await workers[i]
    if (failures.length > 0) throw failures[0]
    return handed
  }

  /**
   * The next command to hand off: the earliest due command of the account
   * whose turn it is, if it has a slot free; null when no account has one due
   * (or the executor has no free slot); 'busy' when none is due but another
   * dispatcher serves an account now. Accounts that are full, or whose
   * commands are all put off, are handed back and the next one is looked at.
   */
  async #claim(): Promise<Served | 'busy' | null> {
    // A local executor queues what it cannot run yet, first come first served: hand it only what it can start.
    const free = this.#executor.freeSlots?.()
    if (free !== undefined && free - this.#handing <= 0) return null
    // Reserved before the claim, so this process's workers never promise the executor one slot twice.
    this.#handing += 1
    let claim: Served | 'busy' | null = null
    try {
      claim = await this.#turns.next()
    } finally {
      if (claim === null || claim === 'busy') this.#handing -= 1
    }
    return claim
  }

  /** Hands one claimed command to the executor and records the outcome; true when it was handed off. */
  async #handOff(served: Served): Promise<boolean> {
    try {
      return await this.#handOffClaimed(served)
    } finally {
      this.#handing -= 1
    }
  }

  async #handOffClaimed({ claim, turnReleased }: Served): Promise<boolean> {
    const { doc } = claim
    const attempt = doc.dispatch_attempts
    const log = this.#log.child({ command_id: doc._id, account_id: doc.account_id, attempt })
    const failed = await this.#executor.execute(toCommandSpec(doc)).then(
      () => null,
      (err: unknown) => ({ err }),
    )
    // The turn is released before the outcome is written, as it was when the release came first: a store that
    // failed it ends the round (the command's lease and the executor's idempotence cover the hand-off).
    const releaseError = await turnReleased
    if (releaseError) throw releaseError
    if (failed) {
      const { err } = failed
      const retryInMs = this.#backoffMs(attempt)
      log.warn({ err, retry_in_ms: retryInMs }, 'hand-off to executor failed; will retry')
      this.#metrics?.handOff('retry')
      const dueAt = new Date(this.#now().getTime() + retryInMs)
      const lastError = err instanceof Error ? err.message : String(err)
      // The slot is given back: a command waiting for its retry holds none.
      const kept = await this.#outbox.putOff(claim, dueAt, { dispatch_last_error: lastError, dispatch_slot: null })
      if (!kept) log.warn('the hand-off outlived its lease: another dispatcher has the command now')
      // Announced again, as an acceptance is: a turn of the account that read the command while this
      // hand-off held it (due when the lease ends) must not put the account off until then.
      else await this.#schedule.enqueue(doc.account_id, this.#now())
      return false
    }
    if (!(await this.#outbox.finish(claim, { dispatch_queue: null }))) {
      // Handed off all the same; the other holder's hand-off meets the executor's idempotence.
      log.warn('the hand-off outlived its lease: another dispatcher has the command now')
    }
    log.info('command dispatched')
    this.#metrics?.handOff('dispatched')
    this.#metrics?.waited((this.#now().getTime() - doc.created_at.getTime()) / 1000)
    return true
  }
}
