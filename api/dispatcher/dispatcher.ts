import { systemClock, type Clock, type Sleep } from '../clock.js'
import { toCommandSpec, type CommandDocument } from '../commands/command-document.js'
import type { CommandRepository } from '../commands/command-repository.js'
import type { Plan } from '../accounts/plans.js'
import type { CommandSpec } from '../../contracts/command-spec.js'
import type { Executor, HandOff } from '../executors/executor.js'
import type { Logger } from '../logger.js'
import type { DispatchRecorder } from '../metrics/service-metrics.js'
import { PollingLoop } from '../polling-loop.js'
import type { Claim, WorkList } from '../work-list.js'
import { newSlotHolder, slotTakenAt, type AccountSchedule, type AccountScheduleDocument } from './account-schedule.js'
import { dispatchBackoffMs } from './backoff.js'
import type { ConcurrencyLimits } from './concurrency-limits.js'

/** How many accounts one claim looks at before it answers none (each one full, taken by another dispatcher, or with nothing due). */
const MAX_TURNS_PER_CLAIM = 32

export interface DispatcherOptions {
  /** The commands, their hand-offs (`dispatch`) and the accounts' turns (`schedule`). */
  commands: CommandRepository
  executor: Executor
  logger: Logger
  now?: Clock
  sleep?: Sleep
  /** How often to look for due commands when nothing nudges it; a full account is looked at again after as long. */
  pollIntervalMs?: number
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
  /** The storage room a command's runner is told at hand-off (StorageQuota#roomFor); null or absent: none. */
  storageRoom?: (command: CommandDocument) => Promise<number | null>
}

/**
 * The outbox's consumer. A command record is inserted waiting for its
 * hand-off (api/work-list.ts); the dispatcher takes the account whose turn it
 * is (api/dispatcher/account-schedule.ts: round robin across the accounts
 * with waiting commands, docs/adr/0003-fair-dispatch.md), and, if the account
 * has a slot free under its plan's limit, claims that account's earliest due
 * command (due-commands.ts), hands its spec to the executor, and marks it
 * done, or puts it off with a backoff when the executor failed. Taking the
 * turn is one write that also takes the slot; nothing is held between
 * writes. A claim is a lease: if this process dies mid-hand-off, the record
 * is due again when the lease ends and another dispatcher (or this one,
 * restarted) takes it, so nothing accepted is lost and no recovery scan is
 * needed. The executor's idempotence covers the one
 * overlap left: a crash after the hand-off, before the record was marked done.
 * An executor that records its run on the record (the local one) writes it
 * in the write that marks the hand-off done (HandOff#record), and starts the
 * run only once that write landed: no overlap, and one write for both.
 */
export class Dispatcher {
  readonly #commands: CommandRepository
  readonly #outbox: WorkList<CommandDocument>
  readonly #executor: Executor
  readonly #log: Logger
  readonly #now: Clock
  readonly #polling: PollingLoop
  readonly #pollIntervalMs: number
  /** When #announceMissing looks next (epoch ms, the injected clock's). */
  #nextMissingCheck = 0
  readonly #leaseMs: number
  readonly #backoffMs: (attempts: number) => number
  readonly #concurrency: number
  readonly #metrics: DispatchRecorder | undefined
  readonly #schedule: AccountSchedule
  readonly #storageRoom: DispatcherOptions['storageRoom']
  readonly #limits: ConcurrencyLimits | undefined
  readonly #accountPlan: (accountId: string) => Promise<Plan | null>

  constructor(options: DispatcherOptions) {
    this.#commands = options.commands
    this.#outbox = this.#commands.dispatch
    this.#executor = options.executor
    this.#log = options.logger.child({ component: 'dispatcher', executor: options.executor.name })
    this.#now = options.now ?? systemClock
    // No recovery scan: a crashed hand-off's lease ends, and a claim that finds no account due looks for one unannounced.
    this.#pollIntervalMs = options.pollIntervalMs ?? 1_000
    this.#polling = new PollingLoop(
      { drain: () => this.drain() },
      {
        pollIntervalMs: this.#pollIntervalMs,
        ...(options.sleep ? { sleep: options.sleep } : {}),
        log: this.#log,
        // MongoDB unreachable: the next poll retries.
        roundFailed: 'dispatch round failed',
      },
    )
    this.#leaseMs = options.leaseMs ?? 60_000
    this.#backoffMs = options.backoffMs ?? dispatchBackoffMs
    this.#storageRoom = options.storageRoom
    this.#concurrency = options.concurrency ?? 4
    this.#metrics = options.metrics
    this.#schedule = this.#commands.schedule
    this.#limits = options.concurrencyLimits
    this.#accountPlan = options.accountPlan ?? (async () => null)
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
   * Tells a running dispatcher that work was just recorded, a slot of the
   * executor freed, or a command ended (its terminal write gave its account's
   * slot back: AccountSchedule#freeSlotOfEnded), so it looks now instead of
   * at its next poll. It names no command: claiming by id would serve whoever
   * submitted last before the accounts whose turn it is.
   */
  nudge(): void {
    if (!this.#polling.running) return
    this.#polling.nudge()
  }

  /**
   * Hands off every due command, up to `concurrency` at a time; returns how
   * many were handed off. A worker joins with each claim, so an idle poll
   * costs one claim and a burst fills every slot; a worker whose claim finds
   * nothing due leaves, and the round ends when the last one has (what falls
   * due later comes with a nudge or the next poll). Not the first: an account
   * another worker just served is due at that worker's "now", which may be a
   * little later than this one's, and that worker goes on serving it.
   */
  async drain(): Promise<number> {
    let handed = 0
    /** Hand-offs of this round between their claim and the executor's answer: slots of the executor already promised. */
    let promised = 0
    let working = 0
    let failed = false
    const failures: unknown[] = []
    const workers: Array<Promise<void>> = []
    // A local executor queues what it cannot run yet, first come first served: hand it only what it can start.
    const executorFull = () => (this.#executor.freeSlots?.() ?? Infinity) - promised <= 0
    const work = async (): Promise<void> => {
      while (!failed && !(this.#polling.stopping && this.#polling.running) && !executorFull()) {
        promised += 1
        try {
          const claim = await this.#nextClaim()
          if (claim === null) return
          if (working < this.#concurrency) startWorker()
          if (await this.#handOff(claim)) handed += 1
        } finally {
          promised -= 1
        }
      }
    }
    // A worker that fails (MongoDB unreachable) ends the round; the others finish their hand-offs first.
    const startWorker = () => {
      working += 1
      workers.push(
        work()
          .catch((err: unknown) => {
            failures.push(err)
            failed = true
          })
          .finally(() => void (working -= 1)),
      )
    }
    startWorker()
    // A worker starts its successor before it ends, so this sees every worker of the round.
    for (let i = 0; i < workers.length; i++) await workers[i]
    if (failures.length > 0) throw failures[0]
    return handed
  }

  /**
   * The next command to hand off, claimed: the earliest due command of the
   * account whose turn it is, if it has a slot free; null when no account
   * has one. Accounts that are full, or whose commands are all put off, are
   * put off in turn and the next one is looked at.
   */
  async #nextClaim(): Promise<Claim<CommandDocument> | null> {
    for (let looked = 0; looked < MAX_TURNS_PER_CLAIM; looked++) {
      const now = this.#now()
      const account = await this.#schedule.nextDue(now)
      if (!account) {
        if (await this.#announceMissing(now)) continue
        return null
      }
      const limit = this.#limits ? this.#limits[(await this.#accountPlan(account._id)) ?? 'free'] : 0
      const holder = newSlotHolder(now)
      if (!(await this.#schedule.takeTurn(account, limit, holder))) {
        // Full, or another dispatcher took its turn first (then the next look finds where it is now).
        if (limit > 0 && (account.holders?.length ?? 0) >= limit) await this.#whenFull(account, limit, now)
        continue
      }
      const claim = await this.#commands.due.claim(account._id, now, this.#leaseMs, holder.token)
      if (claim) return claim
      await this.#schedule.endEmptyTurn(account, holder, await this.#commands.due.nextDueAt(account._id))
    }
    return null
  }

  /**
   * A full account: slots whose holders died (a turn that never claimed, a
   * command whose end or put-off did not give its slot back) are freed and
   * the account is looked at again; with every slot live it waits until a
   * command of it ends (its terminal write wakes it) or a poll interval passed.
   */
  async #whenFull(account: AccountScheduleDocument, limit: number, now: Date): Promise<void> {
    const holders = account.holders ?? []
    const live = await this.#commands.slotsHeld(holders, now)
    const stale = holders.filter((token) => !live.has(token) && slotTakenAt(token).getTime() + this.#leaseMs <= now.getTime())
    if (stale.length > 0) await this.#schedule.freeSlots(account._id, stale)
    else await this.#schedule.putOffFull(account, limit, new Date(now.getTime() + this.#pollIntervalMs))
  }

  /**
   * No account is due: one waiting command of an account the schedule does
   * not list as waiting (an API process died between a command's insert and
   * its account's announcement) has its account announced. True when one was.
   * Looked for at most once a poll interval: every command's end and every
   * freed slot nudges a drain that finds nothing due, and two reads each for
   * a crash's leftovers cost more than the rest of that drain; a leftover
   * waits a poll interval at most, as it would without the nudges.
   */
  async #announceMissing(now: Date): Promise<boolean> {
    if (now.getTime() < this.#nextMissingCheck) return false
    const accountId = await this.#commands.unannouncedAccount(await this.#schedule.waitingAccounts())
    // Found none: the next look waits. Found one: there may be more, looked for at once.
    if (accountId === null) {
      this.#nextMissingCheck = now.getTime() + this.#pollIntervalMs
      return false
    }
    this.#log.warn({ account_id: accountId }, 'an account with waiting commands was missing from the schedule; added')
    await this.#schedule.enqueue(accountId, now)
    return true
  }

  /** What the executor is handed: the command's spec, with the storage room its account has left now. */
  async #specOf(doc: CommandDocument): Promise<CommandSpec> {
    const room = (await this.#storageRoom?.(doc)) ?? null
    return { ...toCommandSpec(doc), ...(room === null ? {} : { storageRoomBytes: room }) }
  }

  /** Hands one claimed command to the executor and records the outcome; true when it was handed off. */
  async #handOff(claim: Claim<CommandDocument>): Promise<boolean> {
    const { doc } = claim
    const attempt = doc.dispatch_attempts
    const log = this.#log.child({ command_id: doc._id, account_id: doc.account_id, attempt })
    /** Whether the executor marked the hand-off done (with its run's fields), and whether that write landed; null: it did not. */
    const written: { recorded: boolean | null } = { recorded: null }
    const handOff: HandOff = {
      claimed: doc,
      record: async (fields) => (written.recorded = await this.#outbox.finish(claim, { ...fields, dispatch_queue: null })),
    }
    const failed = await this.#specOf(doc).then((spec) => this.#executor.execute(spec, handOff)).then(
      () => null,
      (err: unknown) => ({ err }),
    )
    if (failed && written.recorded === null) {
      const { err } = failed
      const retryInMs = this.#backoffMs(attempt)
      log.warn({ err, retry_in_ms: retryInMs }, 'hand-off to executor failed; will retry')
      this.#metrics?.handOff('retry')
      const dueAt = new Date(this.#now().getTime() + retryInMs)
      const lastError = err instanceof Error ? err.message : String(err)
      // The slot is given back: a command waiting for its retry holds none.
      const kept = await this.#outbox.putOff(claim, dueAt, { dispatch_last_error: lastError, dispatch_slot: null })
      if (!kept) {
        log.warn('the hand-off outlived its lease: another dispatcher has the command now')
        return false
      }
      if (doc.dispatch_slot) await this.#schedule.freeSlots(doc.account_id, [doc.dispatch_slot])
      // Announced again, as an acceptance is: a turn of the account that read the command while this
      // hand-off held it (due when the lease ends) must not put the account off until then.
      await this.#schedule.enqueue(doc.account_id, this.#now())
      return false
    }
    if (failed) log.error({ err: failed.err }, 'the executor failed after it had marked the hand-off done')
    if (!(written.recorded ?? (await this.#outbox.finish(claim, { dispatch_queue: null })))) {
      // Handed off all the same (an executor that recorded its run did not start it); the other holder's hand-off meets the executor's idempotence.
      log.warn('the hand-off outlived its lease: another dispatcher has the command now')
    }
    log.info('command dispatched')
    this.#metrics?.handOff('dispatched')
    this.#metrics?.waited((this.#now().getTime() - doc.created_at.getTime()) / 1000)
    return true
  }
}
