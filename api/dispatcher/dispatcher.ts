import type { Db } from 'mongodb'
import { systemClock, type Clock, type Sleep } from '../clock.js'
import { toCommandSpec, type CommandDocument } from '../commands/command-document.js'
import { CommandRepository } from '../commands/command-repository.js'
import type { Executor } from '../executors/executor.js'
import type { Logger } from '../logger.js'
import type { DispatchRecorder } from '../metrics/service-metrics.js'
import { PollingLoop } from '../polling-loop.js'
import type { Claim, WorkList } from '../work-list.js'
import { dispatchBackoffMs } from './backoff.js'

/** How many nudged command ids a dispatcher keeps to claim by id. */
const MAX_NAMED = 10_000

/** The dispatcher's writes, each one step that `interleave` may order against another dispatcher's. */
export type DispatchStep = 'upgrade' | 'claim' | 'finish' | 'put-off'

/** Runs one step of a dispatcher; the default runs it at once. */
export type Interleave = <T>(step: DispatchStep, work: () => Promise<T>) => Promise<T>

export interface DispatcherOptions {
  db: Db
  executor: Executor
  logger: Logger
  now?: Clock
  sleep?: Sleep
  /** How often to look for due commands when nothing nudges it. */
  pollIntervalMs?: number
  /** How often to look for records a previous version left in its side queue (an upgrade); once at start, then rarely. */
  upgradeIntervalMs?: number
  /** How long a claim keeps other dispatchers away; longer than any hand-off takes. */
  leaseMs?: number
  backoffMs?: (attempts: number) => number
  /** Hand-offs in flight at once. */
  concurrency?: number
  metrics?: DispatchRecorder
  /** Tests run two dispatchers' steps in an order a seeded scheduler picks. */
  interleave?: Interleave
}

/**
 * The outbox's consumer. A command record is inserted waiting for its
 * hand-off (api/work-list.ts); the dispatcher claims the earliest due one,
 * hands its spec to the executor, and marks it done, or puts it off with a
 * backoff when the executor failed. A claim is a lease: if this process dies
 * mid-hand-off, the record is due again when the lease ends and another
 * dispatcher (or this one, restarted) takes it, so nothing accepted is lost
 * and no recovery scan is needed. The executor's idempotence covers the one
 * overlap left: a crash after the hand-off, before the record was marked done.
 */
export class Dispatcher {
  readonly #commands: CommandRepository
  readonly #outbox: WorkList<CommandDocument>
  readonly #executor: Executor
  readonly #log: Logger
  readonly #now: Clock
  readonly #polling: PollingLoop
  readonly #leaseMs: number
  readonly #backoffMs: (attempts: number) => number
  readonly #concurrency: number
  readonly #metrics: DispatchRecorder | undefined
  readonly #interleave: Interleave
  /** Commands this process just accepted, claimed by id before anything is looked for (see nudge). */
  readonly #named: string[] = []

  constructor(options: DispatcherOptions) {
    this.#commands = new CommandRepository(options.db)
    this.#outbox = this.#commands.dispatch
    this.#executor = options.executor
    this.#log = options.logger.child({ component: 'dispatcher', executor: options.executor.name })
    this.#now = options.now ?? systemClock
    // The loop's periodic "recover" step is the upgrade: a crashed hand-off needs none (its lease ends).
    this.#polling = new PollingLoop(
      { recover: () => this.upgrade(), drain: () => this.drain() },
      {
        pollIntervalMs: options.pollIntervalMs ?? 1_000,
        recoveryIntervalMs: options.upgradeIntervalMs ?? 300_000,
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
    this.#interleave = options.interleave ?? ((_step, work) => work())
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
   * Tells a running dispatcher that work was just recorded, so it looks now
   * instead of at its next poll. The commands' ids, when the caller has them,
   * are claimed by id, which costs a lookup by _id where looking for the
   * earliest due record reads every waiting one on the embedded store: so a
   * burst does not slow its own dispatch down.
   */
  nudge(commandIds: readonly string[] = []): void {
    if (!this.#polling.running) return
    // Bounded: past it, the ids are left to the search, which finds every waiting record anyway.
    for (const id of commandIds) if (this.#named.length < MAX_NAMED) this.#named.push(id)
    this.#polling.nudge()
  }

  /**
   * Moves onto the records the hand-offs a previous version kept in its side
   * queue (see CommandRepository#upgradeDispatchLayout). Run at start and
   * then every `upgradeIntervalMs`, for the records an API replica of the
   * previous version may still write during a rolling upgrade; once the side
   * queue is gone it costs one listCollections.
   */
  async upgrade(): Promise<number> {
    const moved = await this.#interleave('upgrade', () => this.#commands.upgradeDispatchLayout(this.#now()))
    if (moved > 0) this.#log.warn({ moved }, 'moved hand-offs of the previous layout onto their records')
    return moved
  }

  /**
   * Hands off every due command, up to `concurrency` at a time; returns how
   * many were handed off. A worker joins with each claim, so an idle poll
   * costs one claim and a burst fills every slot; the first claim that finds
   * nothing due ends the round for all (what falls due later comes with a
   * nudge or the next poll).
   */
  async drain(): Promise<number> {
    let handed = 0
    let exhausted = false
    const failures: unknown[] = []
    const workers: Array<Promise<void>> = []
    const work = async (): Promise<void> => {
      while (!exhausted && !(this.#polling.stopping && this.#polling.running)) {
        const claim = await this.#interleave('claim', () => this.#claim())
        if (!claim) {
          exhausted = true
          return
        }
        if (workers.length < this.#concurrency) startWorker()
        if (await this.#handOff(claim)) handed += 1
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

  /** The next command to hand off: one a nudge named (unless another dispatcher took it), else the earliest due; null when none is due. */
  async #claim(): Promise<Claim<CommandDocument> | null> {
    for (let id = this.#named.shift(); id !== undefined; id = this.#named.shift()) {
      const claim = await this.#outbox.claimOne(id, this.#now(), this.#leaseMs)
      if (claim) return claim
    }
    return this.#outbox.claimNext(this.#now(), this.#leaseMs)
  }

  /** Hands one claimed command to the executor and records the outcome; true when it was handed off. */
  async #handOff(claim: Claim<CommandDocument>): Promise<boolean> {
    const { doc } = claim
    const attempt = doc.dispatch_attempts
    const log = this.#log.child({ command_id: doc._id, account_id: doc.account_id, attempt })
    try {
      await this.#executor.execute(toCommandSpec(doc))
    } catch (err) {
      const retryInMs = this.#backoffMs(attempt)
      log.warn({ err, retry_in_ms: retryInMs }, 'hand-off to executor failed; will retry')
      this.#metrics?.handOff('retry')
      const dueAt = new Date(this.#now().getTime() + retryInMs)
      const lastError = err instanceof Error ? err.message : String(err)
      const kept = await this.#interleave('put-off', () => this.#outbox.putOff(claim, dueAt, { dispatch_last_error: lastError }))
      if (!kept) log.warn('the hand-off outlived its lease: another dispatcher has the command now')
      return false
    }
    if (!(await this.#interleave('finish', () => this.#outbox.finish(claim)))) {
      // Handed off all the same; the other holder's hand-off meets the executor's idempotence.
      log.warn('the hand-off outlived its lease: another dispatcher has the command now')
    }
    log.info('command dispatched')
    this.#metrics?.handOff('dispatched')
    return true
  }
}
