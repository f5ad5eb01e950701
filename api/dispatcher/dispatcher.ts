import type { Collection, Db } from 'mongodb'
import type { CommandSpec } from '../../contracts/command-spec.js'
import { systemClock, type Clock, type Sleep } from '../clock.js'
import { toCommandSpec, type CommandDocument } from '../commands/command-document.js'
import { commandsCollection } from '../commands/command-repository.js'
import type { Executor } from '../executors/executor.js'
import type { Logger } from '../logger.js'
import { PollingLoop } from '../polling-loop.js'
import type { DispatchRecorder } from '../metrics/service-metrics.js'
import { dispatchBackoffMs } from './backoff.js'
import { DispatchLeases } from './dispatch-leases.js'
import { DispatchQueue, type QueueEntry } from './dispatch-queue.js'
import { DueCandidates, type Candidate } from './due-candidates.js'

interface Claimed {
  spec: CommandSpec
  entry: QueueEntry
}

export interface DispatcherOptions {
  db: Db
  executor: Executor
  logger: Logger
  now?: Clock
  sleep?: Sleep
  /** How often to look for due commands when nothing nudges it. */
  pollIntervalMs?: number
  /** How often to scan for pending commands that lost their queue entry (and once at start). */
  recoveryIntervalMs?: number
  /** How long a claim keeps other dispatchers away; longer than any hand-off takes. */
  leaseMs?: number
  backoffMs?: (attempts: number) => number
  /** Hand-offs in flight at once. */
  concurrency?: number
  metrics?: DispatchRecorder
}

/**
 * The outbox's consumer. Takes due entries of the dispatch queue, marks each
 * command claimed, hands it to the executor and drops the entry.
 * A claim is a lease, an insert with a unique _id: the one write FerretDB 1.x
 * performs atomically (its filtered updates read, modify and write back, so
 * two dispatchers could both "win" a findOneAndUpdate). Only the lease holder
 * writes the entry and the command. A crash anywhere leaves the command
 * pending and its entry due, held until the lease ends; a crash before the
 * entry was written is caught by the recovery scan. Nothing accepted is lost;
 * the executor's idempotence covers the one overlap left (a crash after the
 * hand-off, before the entry's removal).
 *
 * What a first hand-off costs, each op for a reason: a share of one due
 * query per round (workers of one process share it and never race each
 * other), the lease insert (the claim), the claim mark (the recovery scan and
 * the record's single-writer rule need it), and the entry's removal (the
 * end of the work). The entry carries the spec, so the record is not read;
 * leases are kept (see DispatchLeases), so the entry is re-read only on a
 * takeover and no lease is deleted; the entry is written only on a failure
 * (its attempt count and backoff) or to clear a recovered entry's flag, so a
 * claimed entry stays due and the lease alone keeps others off it
 * (`#heldElsewhere` keeps them from asking twice).
 */
export class Dispatcher {
  readonly #commands: Collection<CommandDocument>
  readonly #leases: DispatchLeases
  readonly #queue: DispatchQueue
  readonly #executor: Executor
  readonly #log: Logger
  readonly #now: Clock
  readonly #polling: PollingLoop
  readonly #leaseMs: number
  readonly #backoffMs: (attempts: number) => number
  readonly #concurrency: number
  readonly #metrics: DispatchRecorder | undefined
  /** Command ids a worker of this dispatcher is on: no other worker of it tries them. */
  readonly #inFlight = new Set<string>()
  /** Command id → when the lease another dispatcher (or a dead one) holds on it ends: not tried before. */
  readonly #heldElsewhere = new Map<string, number>()

  constructor(options: DispatcherOptions) {
    this.#commands = commandsCollection(options.db)
    this.#leases = new DispatchLeases(options.db)
    this.#queue = new DispatchQueue(options.db)
    this.#executor = options.executor
    this.#log = options.logger.child({ component: 'dispatcher', executor: options.executor.name })
    this.#now = options.now ?? systemClock
    this.#polling = new PollingLoop(this, {
      pollIntervalMs: options.pollIntervalMs ?? 1_000,
      recoveryIntervalMs: options.recoveryIntervalMs ?? 300_000,
      ...(options.sleep ? { sleep: options.sleep } : {}),
      log: this.#log,
      // MongoDB unreachable: the next poll retries.
      roundFailed: 'dispatch round failed',
    })
    this.#leaseMs = options.leaseMs ?? 60_000
    this.#backoffMs = options.backoffMs ?? dispatchBackoffMs
    this.#concurrency = options.concurrency ?? 4
    this.#metrics = options.metrics
  }

  /** Starts polling (after a recovery scan); idempotent. */
  start(): void {
    if (this.#polling.running) return
    this.#polling.start()
    this.#log.info('dispatcher started')
  }

  /** Stops polling and waits for hand-offs in flight; a command it leaves claimed is retaken after its lease. */
  async stop(): Promise<void> {
    if (!this.#polling.running) return
    await this.#polling.stop()
    this.#log.info('dispatcher stopped')
  }

  /** Tells a running dispatcher that work was just recorded, so it looks now instead of at its next poll. */
  nudge(): void {
    this.#polling.nudge()
  }

  /**
   * Gives every pending command without a queue entry one (a crash between
   * the record's insert and its entry's), then prunes the leases of commands
   * long gone from the queue. Full scans on FerretDB 1.x: hence once at start
   * and then rarely. Returns how many entries it created.
   */
  async recover(): Promise<number> {
    const now = this.#now()
    let created = 0
    const pending = this.#commands.find({ 'dispatch.state': 'pending' }, { projection: { _id: 1 } })
    for await (const { _id } of pending) {
      if (await this.#queue.ensure(_id, now)) created += 1
    }
    if (created > 0) this.#log.warn({ created }, 'recovered pending commands without a queue entry')
    // Twice the lease: more than the window a candidate is trusted in (#lease), with room for clock skew between replicas.
    await this.#leases.prune(await this.#queue.ids(), now, 2 * this.#leaseMs)
    return created
  }

  /** Hands off every due command, `concurrency` at a time; returns how many were handed off. */
  async drain(): Promise<number> {
    const round = new DueCandidates((limit) => this.#loadDue(limit), this.#inFlight, this.#concurrency * 4)
    const workers = Array.from({ length: this.#concurrency }, async () => {
      let handed = 0
      for (;;) {
        if (this.#polling.stopping && this.#polling.running) return handed
        const candidate = await round.next()
        if (!candidate) return handed
        try {
          const claimed = await this.#lease(candidate)
          if (claimed && (await this.#handOff(claimed))) handed += 1
        } finally {
          // Settled (entry removed or moved on) or left to its lease: either way no longer this worker's.
          this.#inFlight.delete(candidate.entry._id)
        }
      }
    })
    return (await Promise.all(workers)).reduce((a, b) => a + b, 0)
  }

  /**
   * One due query for the whole round (refilled when its list runs dry),
   * leaving out what this dispatcher is on and what it saw held elsewhere, so
   * held entries at the head of the queue cannot hide the rest.
   */
  async #loadDue(limit: number): Promise<Candidate[]> {
    const now = this.#now()
    for (const [id, until] of this.#heldElsewhere) if (until <= now.getTime()) this.#heldElsewhere.delete(id)
    const entries = await this.#queue.due(now, limit, [...this.#inFlight, ...this.#heldElsewhere.keys()])
    return entries.map((entry) => ({ entry, readAt: now.getTime() }))
  }

  /**
   * Takes the lease on the candidate's attempt and marks the command claimed
   * on its first hand-off. A fresh lease proves nobody touched that attempt
   * since the candidate was read (a finished attempt's lease outlives the
   * candidate, see DispatchLeases), as long as the candidate is younger than
   * the lease pruning's grace: the candidate is then the entry. A takeover, or
   * an older candidate, re-reads the entry.
   */
  async #lease({ entry: candidate, readAt }: Candidate): Promise<Claimed | null> {
    const now = this.#now()
    const lease = await this.#leases.take(candidate._id, candidate.attempts, now, this.#leaseMs)
    if (!lease.taken) {
      this.#heldElsewhere.set(candidate._id, lease.until.getTime())
      return null
    }
    const trusted = !lease.takeover && this.#now().getTime() - readAt < this.#leaseMs
    const entry = trusted ? candidate : await this.#current(candidate, now)
    // Gone: another holder finished this attempt before the lease ended (this lease is left to pruning, like every other).
    if (!entry) return null
    // The record is read only when the entry cannot tell what is needed: the spec (absent on recovered and
    // older entries), a recovered entry's check, and whether the record is still pending. The entry tells
    // the last when a failed attempt wrote `claimed`, or on a trusted first attempt: only the holder of
    // attempt 0's lease marks the record, and a fresh lease says there was none. A takeover does not know
    // what the dead holder wrote.
    if (entry.spec && !entry.recovered && (entry.claimed === true || (trusted && entry.attempts === 0))) {
      if (entry.claimed !== true) await this.#markClaimed(entry._id, now)
      return { spec: entry.spec, entry }
    }
    const doc = await this.#commands.findOne({ _id: entry._id })
    // Gone, or an entry the recovery scan re-created for a command the normal path had claimed meanwhile.
    if (!doc || (entry.recovered && doc.dispatch.state !== 'pending')) {
      await this.#queue.remove(entry._id)
      return null
    }
    // Before the claim: a takeover of a crash after it must not take the entry for a stale recovered one and drop it.
    if (entry.recovered) await this.#queue.reschedule(entry._id, { recovered: false })
    if (doc.dispatch.state === 'pending') await this.#markClaimed(doc._id, now)
    return { spec: toCommandSpec(doc), entry: { ...entry, recovered: false } }
  }

  /**
   * The dispatcher's only write to the record, before the executor can start anything that reports on it.
   * Filtered by _id alone: the lease is the guard, and FerretDB 1.x scans the collection for any richer filter.
   */
  async #markClaimed(commandId: string, now: Date): Promise<void> {
    await this.#commands.updateOne({ _id: commandId }, { $set: { dispatch: { state: 'claimed', claimed_at: now } } })
  }

  /** The entry as it is now, if it is still at the candidate's attempt and due; null when the candidate was stale. */
  async #current(candidate: QueueEntry, now: Date): Promise<QueueEntry | null> {
    const entry = await this.#queue.get(candidate._id)
    if (!entry || entry.attempts !== candidate.attempts || entry.due_at > now) return null
    return entry
  }

  /** Hands one claimed command to the executor and records the outcome; true when it was handed off. */
  async #handOff({ spec, entry }: Claimed): Promise<boolean> {
    const attempt = entry.attempts + 1
    const log = this.#log.child({ command_id: spec.commandId, account_id: spec.accountId, attempt })
    try {
      await this.#executor.execute(spec)
    } catch (err) {
      const retryInMs = this.#backoffMs(attempt)
      log.warn({ err, retry_in_ms: retryInMs }, 'hand-off to executor failed; will retry')
      this.#metrics?.handOff('retry')
      // The next attempt has its own lease key; this attempt's lease stays until pruned.
      await this.#queue.reschedule(entry._id, {
        attempts: attempt,
        claimed: true,
        due_at: new Date(this.#now().getTime() + retryInMs),
        last_error: err instanceof Error ? err.message : String(err),
      })
      return false
    }
    // The lease is kept: a dispatcher still holding a candidate for this attempt meets it and backs off.
    await this.#queue.remove(entry._id)
    log.info('command dispatched')
    this.#metrics?.handOff('dispatched')
    return true
  }
}
