import { randomUUID } from 'node:crypto'
import { MongoServerError, type Collection, type Db } from 'mongodb'
import { systemClock, systemSleep, type Clock, type Sleep } from '../clock.js'
import { toCommandSpec, type CommandDocument } from '../commands/command-document.js'
import { commandsCollection } from '../commands/command-repository.js'
import type { Executor } from '../executors/executor.js'
import type { Logger } from '../logger.js'
import type { DispatchRecorder } from '../metrics/service-metrics.js'
import { dispatchBackoffMs } from './backoff.js'
import { DispatchQueue, type QueueEntry } from './dispatch-queue.js'

/** One attempt's lease: its unique _id is what makes a claim exclusive. */
interface DispatchLease {
  _id: string
  command_id: string
  token: string
  expires_at: Date
}

interface Claimed {
  doc: CommandDocument
  entry: QueueEntry
  release(): Promise<unknown>
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

function isDuplicateKey(err: unknown): boolean {
  return err instanceof MongoServerError && err.code === 11000
}

/**
 * The outbox's consumer. Takes due entries of the dispatch queue, marks each
 * command claimed, hands it to the executor and drops the entry.
 * A claim is a lease, an insert with a unique _id: the one write FerretDB 1.x
 * performs atomically (its filtered updates read, modify and write back, so
 * two dispatchers could both "win" a findOneAndUpdate). Only the lease holder
 * writes the entry and the command. A crash anywhere leaves the command
 * pending and its entry due again when the lease ends; a crash before the
 * entry was written is caught by the recovery scan. Nothing accepted is lost;
 * the executor's idempotence covers the one overlap left (a crash after the
 * hand-off, before the mark).
 */
export class Dispatcher {
  readonly #commands: Collection<CommandDocument>
  readonly #leases: Collection<DispatchLease>
  readonly #queue: DispatchQueue
  readonly #executor: Executor
  readonly #log: Logger
  readonly #now: Clock
  readonly #sleep: Sleep
  readonly #pollIntervalMs: number
  readonly #recoveryIntervalMs: number
  readonly #leaseMs: number
  readonly #backoffMs: (attempts: number) => number
  readonly #concurrency: number
  readonly #metrics: DispatchRecorder | undefined
  #loop: Promise<void> | null = null
  #stopping = new AbortController()
  #wake = new AbortController()
  #nudged = false
  #lastRecovery = -Infinity

  constructor(options: DispatcherOptions) {
    this.#commands = commandsCollection(options.db)
    this.#leases = options.db.collection<DispatchLease>('dispatch_leases')
    this.#queue = new DispatchQueue(options.db)
    this.#executor = options.executor
    this.#log = options.logger.child({ component: 'dispatcher', executor: options.executor.name })
    this.#now = options.now ?? systemClock
    this.#sleep = options.sleep ?? systemSleep
    this.#pollIntervalMs = options.pollIntervalMs ?? 1_000
    this.#recoveryIntervalMs = options.recoveryIntervalMs ?? 300_000
    this.#leaseMs = options.leaseMs ?? 60_000
    this.#backoffMs = options.backoffMs ?? dispatchBackoffMs
    this.#concurrency = options.concurrency ?? 4
    this.#metrics = options.metrics
  }

  /** Starts polling (after a recovery scan); idempotent. */
  start(): void {
    if (this.#loop) return
    this.#stopping = new AbortController()
    this.#lastRecovery = -Infinity
    this.#loop = this.#run()
  }

  /** Stops polling and waits for hand-offs in flight; a command it leaves claimed is retaken after its lease. */
  async stop(): Promise<void> {
    if (!this.#loop) return
    this.#stopping.abort()
    this.#wake.abort()
    await this.#loop
    this.#loop = null
  }

  /** Tells a running dispatcher that work was just recorded, so it looks now instead of at its next poll. */
  nudge(): void {
    this.#nudged = true
    this.#wake.abort()
  }

  /**
   * Gives every pending command without a queue entry one (a crash between
   * the record's insert and its entry's). A full scan on FerretDB 1.x, an
   * index scan on MongoDB: hence once at start and then rarely. Returns how
   * many entries it created.
   */
  async recover(): Promise<number> {
    const now = this.#now()
    let created = 0
    const pending = this.#commands.find({ 'dispatch.state': 'pending' }, { projection: { _id: 1 } })
    for await (const { _id } of pending) {
      if (await this.#queue.ensure(_id, now)) created += 1
    }
    if (created > 0) this.#log.warn({ created }, 'recovered pending commands without a queue entry')
    return created
  }

  /** Hands off every due command, `concurrency` at a time; returns how many were handed off. */
  async drain(): Promise<number> {
    const workers = Array.from({ length: this.#concurrency }, async () => {
      let handed = 0
      for (;;) {
        if (this.#stopping.signal.aborted && this.#loop) return handed
        const claimed = await this.#claim()
        if (!claimed) return handed
        if (await this.#handOff(claimed)) handed += 1
      }
    })
    return (await Promise.all(workers)).reduce((a, b) => a + b, 0)
  }

  async #run(): Promise<void> {
    this.#log.info('dispatcher started')
    while (!this.#stopping.signal.aborted) {
      this.#nudged = false
      try {
        const started = performance.now()
        if (started - this.#lastRecovery >= this.#recoveryIntervalMs) {
          this.#lastRecovery = started
          await this.recover()
        }
        await this.drain()
      } catch (err) {
        // MongoDB unreachable: keep polling, the next round retries.
        this.#log.error({ err }, 'dispatch round failed')
      }
      if (this.#nudged || this.#stopping.signal.aborted) continue
      this.#wake = new AbortController()
      await this.#sleep(this.#pollIntervalMs, this.#wake.signal)
    }
    this.#log.info('dispatcher stopped')
  }

  /** The first due entry this dispatcher wins a lease on; null when none is due. */
  async #claim(): Promise<Claimed | null> {
    const now = this.#now()
    for (const candidate of await this.#queue.due(now, this.#concurrency * 2)) {
      const claimed = await this.#lease(candidate, now)
      if (claimed) return claimed
    }
    return null
  }

  /** Takes the lease on one attempt (`command:attempts`) and re-reads the entry and the command under it. */
  async #lease(candidate: QueueEntry, now: Date): Promise<Claimed | null> {
    const lease: DispatchLease = {
      _id: `${candidate._id}:${candidate.attempts}`,
      command_id: candidate._id,
      token: randomUUID(),
      expires_at: new Date(now.getTime() + this.#leaseMs),
    }
    if (!(await this.#insertLease(lease, now))) return null
    const release = () => this.#leases.deleteOne({ _id: lease._id, token: lease.token })
    // The candidate may be stale: another dispatcher may have finished this attempt before our lease.
    const entry = await this.#queue.get(candidate._id)
    if (!entry || entry.attempts !== candidate.attempts || entry.due_at > now) {
      await release()
      return null
    }
    const doc = await this.#commands.findOne({ _id: candidate._id })
    // Gone, or an entry the recovery scan re-created for a command the normal path had claimed meanwhile.
    if (!doc || (entry.recovered && doc.dispatch.state !== 'pending')) {
      await this.#queue.remove(candidate._id)
      await release()
      return null
    }
    // Due again when the lease ends, should this process die mid hand-off; no longer a recovered entry once claimed.
    const claimed = { ...entry, attempts: entry.attempts + 1, due_at: lease.expires_at, recovered: false }
    await this.#queue.reschedule(entry._id, { attempts: claimed.attempts, due_at: claimed.due_at, recovered: false })
    if (doc.dispatch.state === 'pending') {
      // The dispatcher's only write to the record, before the executor can start anything that reports on it.
      // Filtered by _id alone: the lease is the guard, and FerretDB 1.x scans the collection for any richer filter.
      await this.#commands.updateOne({ _id: doc._id }, { $set: { dispatch: { state: 'claimed', claimed_at: now } } })
    }
    return { doc, entry: claimed, release }
  }

  /**
   * Inserts the lease. When the key is held by a lease that has expired (its
   * holder died before moving the entry on), takes over with a successor key
   * (`…~`): again a unique insert, so exactly one of several dispatchers wins
   * the takeover. (Deleting the dead lease and re-inserting would not do:
   * FerretDB's filtered delete could remove the winner's fresh lease.)
   */
  async #insertLease(lease: DispatchLease, now: Date): Promise<boolean> {
    let key = lease._id
    for (let depth = 0; depth < 8; depth++) {
      try {
        await this.#leases.insertOne({ ...lease, _id: key })
        lease._id = key
        return true
      } catch (err) {
        if (!isDuplicateKey(err)) throw err
      }
      const held = await this.#leases.findOne({ _id: key })
      if (held && held.expires_at > now) return false
      key = `${key}~`
    }
    return false
  }

  /** Hands one claimed command to the executor and records the outcome; true when it was handed off. */
  async #handOff({ doc, entry, release }: Claimed): Promise<boolean> {
    const log = this.#log.child({ command_id: doc._id, account_id: doc.account_id, attempt: entry.attempts })
    try {
      await this.#executor.execute(toCommandSpec(doc))
    } catch (err) {
      const retryInMs = this.#backoffMs(entry.attempts)
      log.warn({ err, retry_in_ms: retryInMs }, 'hand-off to executor failed; will retry')
      this.#metrics?.handOff('retry')
      await this.#queue.reschedule(entry._id, {
        due_at: new Date(this.#now().getTime() + retryInMs),
        last_error: err instanceof Error ? err.message : String(err),
      })
      await release()
      return false
    }
    await this.#queue.remove(entry._id)
    // Its own lease and any a dead holder left behind for earlier attempts (a small collection).
    await this.#leases.deleteMany({ command_id: doc._id })
    log.info('command dispatched')
    this.#metrics?.handOff('dispatched')
    return true
  }
}
