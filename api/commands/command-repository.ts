import type { Collection, Db, Filter } from 'mongodb'
import { isTerminalStatus, type CommandStatus } from '../../contracts/command-types.js'
import { AccountSchedule } from '../dispatcher/account-schedule.js'
import { DueCommands } from '../dispatcher/due-commands.js'
import { WorkList, type Claim } from '../work-list.js'
import { StoreIndexes } from '../store-indexes.js'
import type { FileMember } from '../files/schemas.js'
import { CANCEL_FIELDS, DISPATCH_FIELDS, toPollResponse, type CommandDocument } from './command-document.js'
import { CommandRuns } from './command-runs.js'
import { AcceptedCommandsWriter } from './accepted-commands-writer.js'
import type { CommandUsageRow } from '../usage/usage-report.js'
import type { AccountChanges } from '../accounts/account-changes.js'
import type { Clock } from '../clock.js'
import { FinishedCommandCache } from './finished-command-cache.js'
import { PollReads } from './poll-reads.js'
import type { CommandReadRecorder } from '../metrics/service-metrics.js'
import type { CommandPollResponse } from './schemas.js'

/** Read and written here alone: every other part asks this repository. */
const COMMANDS_COLLECTION = 'commands'

/**
 * Commands in MongoDB: the only code that reads or writes the `commands`
 * collection. The API reads within one account; the dispatcher takes the
 * records' hand-offs through `dispatch`, the canceller its requests through
 * `cancels`; the local executor records its runs on them through `runs`.
 */
export class CommandRepository {
  readonly #commands: Collection<CommandDocument>
  /** The outbox: records waiting for their hand-off to the executor (api/work-list.ts). */
  readonly dispatch: WorkList<CommandDocument>
  /** Whose turn it is: the accounts with commands waiting (api/dispatcher/account-schedule.ts). */
  readonly schedule: AccountSchedule
  /** Which of an account's commands are due, read once per burst, and its claims in order (api/dispatcher/due-commands.ts). */
  readonly due: DueCommands
  /** Cancel requests waiting for the worker's canceller (api/cancels/canceller.ts). */
  readonly cancels: WorkList<CommandDocument>
  /** The local executor's runs, recorded on their commands (api/commands/command-runs.ts). */
  readonly runs: CommandRuns
  readonly #accepted: AcceptedCommandsWriter
  readonly #changes: AccountChanges | undefined
  readonly #finished: FinishedCommandCache
  readonly #pollReads: PollReads
  readonly #indexes: StoreIndexes

  /**
   * `changes`: the account-change feed, on which this repository announces a
   * finished command's deleted output and from which its cache of finished
   * commands hears other replicas' (finished-command-cache.ts).
   */
  constructor(db: Db, options: { changes?: AccountChanges | undefined; now?: Clock | undefined; metrics?: CommandReadRecorder | undefined } = {}) {
    this.#commands = db.collection<CommandDocument>(COMMANDS_COLLECTION)
    this.dispatch = new WorkList(this.#commands, DISPATCH_FIELDS)
    this.schedule = new AccountSchedule(db)
    this.due = new DueCommands(this)
    this.cancels = new WorkList(this.#commands, CANCEL_FIELDS)
    this.runs = new CommandRuns(this.#commands)
    this.#accepted = new AcceptedCommandsWriter(this.#commands, this.schedule)
    this.#changes = options.changes
    this.#finished = new FinishedCommandCache({ now: options.now, metrics: options.metrics })
    this.#pollReads = new PollReads(this.#commands)
    this.#indexes = new StoreIndexes(db)
    options.changes?.listen(this.#finished)
  }

  /** One index per query shape: the list (with and without status), the waiting hand-offs, the runs a restart interrupted. */
  async ensureIndexes(): Promise<void> {
    await this.#indexes.ensure(this.#commands, { account_id: 1 }, { created_at: -1, _id: -1 })
    await this.#indexes.ensure(this.#commands, { account_id: 1, status: 1 }, { created_at: -1, _id: -1 })
    await this.dispatch.ensureIndexes(this.#indexes)
    await this.cancels.ensureIndexes(this.#indexes)
    await this.#indexes.ensure(this.#commands, { run_state: 1 })
    // An account's waiting commands and its commands in flight: each an equality on a field set only then.
    await this.#indexes.ensure(this.#commands, { dispatch_queue: 1 }, { dispatch_due_at: 1 })
    await this.#indexes.ensure(this.#commands, { dispatch_slot: 1 })
    await this.schedule.ensureIndexes()
  }

  /**
   * Records accepted commands, each waiting for its hand-off in the same
   * document, and announces their account to the dispatcher. Concurrent
   * submissions are written together (accepted-commands-writer.ts); each
   * caller learns its own outcome.
   */
  async insert(docs: readonly CommandDocument[]): Promise<void> {
    await this.#accepted.write(docs)
  }

  /**
   * Takes the account's earliest due command for its hand-off, marking it as
   * holding the account's slot `slot` (api/dispatcher/account-schedule.ts); null when none is due.
   */
  async claimForAccount(accountId: string, now: Date, leaseMs: number, slot: string): Promise<Claim<CommandDocument> | null> {
    return this.dispatch.claimNext(now, leaseMs, { dispatch_queue: accountId }, { dispatch_slot: slot })
  }

  /** Takes one of the account's commands by id if it is waiting and due, as claimForAccount would. */
  async claimOneForAccount(commandId: string, accountId: string, now: Date, leaseMs: number, slot: string): Promise<Claim<CommandDocument> | null> {
    return this.dispatch.claimOne(commandId, now, leaseMs, { dispatch_queue: accountId }, { dispatch_slot: slot })
  }

  /**
   * The ids of the account's commands due at `now`, in the order
   * claimForAccount takes them, at most `limit`; when none is, what
   * nextDueForAccount would answer, from the same read.
   */
  async dueForAccount(accountId: string, now: Date, limit: number): Promise<{ due: string[]; nextDueAt: Date | null }> {
    return this.dispatch.dueIds(now, limit, { dispatch_queue: accountId })
  }

  /** When the account's earliest waiting command is due; null when it has none waiting. */
  async nextDueForAccount(accountId: string): Promise<Date | null> {
    return this.dispatch.nextDueAt({ dispatch_queue: accountId })
  }

  /**
   * Which of these slots a command holds at `now`: handed to the executor
   * and not ended, or claimed by a dispatcher whose lease still runs. Read
   * from the records, so a slot whose holder died is seen as free.
   */
  async slotsHeld(slots: readonly string[], now: Date): Promise<Set<string>> {
    const docs = await this.#commands
      .find({ dispatch_slot: { $in: [...slots] }, status: { $in: ['QUEUED', 'PROCESSING'] } }, { projection: { dispatch_slot: 1, dispatch_state: 1, dispatch_claim: 1, dispatch_due_at: 1 } })
      .toArray()
    return new Set(docs.filter((doc) => doc.dispatch_state === 'done' || (doc.dispatch_claim !== null && doc.dispatch_due_at > now)).map((doc) => doc.dispatch_slot as string))
  }

  /** How many commands the account has waiting for their hand-off. */
  async waitingCount(accountId: string): Promise<number> {
    return this.#commands.countDocuments({ dispatch_queue: accountId, dispatch_state: 'waiting' })
  }

  /**
   * An account with a command waiting for its hand-off that is none of
   * `announced` (the accounts the schedule lists as waiting); null when
   * there is none. One read on the waiting commands' index.
   */
  async unannouncedAccount(announced: readonly string[]): Promise<string | null> {
    const doc = await this.#commands.findOne({ dispatch_state: 'waiting', dispatch_queue: { $nin: [...announced] } }, { projection: { account_id: 1 } })
    return doc?.account_id ?? null
  }

  /** The command if it is the account's. */
  async find(accountId: string, commandId: string): Promise<CommandDocument | null> {
    return this.#commands.findOne({ _id: commandId, account_id: accountId })
  }

  /**
   * The command as GET /commands/:id shows it, if it is the account's: a
   * finished one from this process's cache when it holds it, anything else
   * read from the store (finished-command-cache.ts), together with the other
   * GETs that arrive while a read is at the store (poll-reads.ts).
   */
  async findPollResponse(accountId: string, commandId: string): Promise<CommandPollResponse | null> {
    return this.#finished.read(accountId, commandId, async () => {
      const doc = await this.#pollReads.read(accountId, commandId)
      return doc && toPollResponse(doc)
    })
  }

  /** The account's commands, newest first; ties broken by id so pages never overlap. */
  async list(accountId: string, page: { limit: number; offset: number; status?: CommandStatus | undefined }): Promise<CommandDocument[]> {
    const filter: Filter<CommandDocument> = { account_id: accountId }
    if (page.status) filter.status = page.status
    return this.#commands.find(filter).sort({ created_at: -1, _id: -1 }).skip(page.offset).limit(page.limit).toArray()
  }

  /**
   * The account's commands submitted since `since`, four fields each, over
   * the account's index range (usage: api/usage/, the console's usage page).
   * Summed by the caller, not in a $group (api/store-compatibility.ts).
   */
  async usageRowsSince(accountId: string, since: Date): Promise<CommandUsageRow[]> {
    return this.#commands
      .find({ account_id: accountId, created_at: { $gte: since } }, { projection: { _id: 0, created_at: 1, status: 1, total_processing_seconds: 1, ffmpeg_command_run_seconds: 1 } })
      .toArray()
  }

  /**
   * Marks one managed output deleted in the command's result, with its `files`
   * as they are now (no storage_url), and announces it so every replica drops
   * the finished command it cached; true when it changed.
   */
  async markOutputDeleted(commandId: string, alias: string, files: FileMember[], now: Date): Promise<boolean> {
    const result = await this.#commands.updateOne(
      { _id: commandId, [`output_results.${alias}.is_deleted`]: false },
      { $set: { [`output_results.${alias}.is_deleted`]: true, [`output_results.${alias}.storage_url`]: null, [`output_results.${alias}.files`]: files, updated_at: now } },
    )
    // Announced whether or not this call changed it: a caller that crashed after the write and is retried announces then.
    await this.#changes?.announce({ kind: 'command', command_id: commandId })
    return result.modifiedCount === 1
  }

  // Cancels. The API records the request (once); the canceller carries it
  // out; the status projector alone writes the FAILED / CANCELLED it reports.

  /**
   * Records a cancel of the account's command if it has not ended and was
   * not cancelled before, waiting for the canceller; false when nothing was
   * written (the caller reads the record again to say why).
   */
  async requestCancel(accountId: string, commandId: string, now: Date): Promise<boolean> {
    const result = await this.#commands.updateOne(
      { _id: commandId, account_id: accountId, status: { $in: ['QUEUED', 'PROCESSING'] }, cancel_requested_at: { $exists: false } },
      { $set: { cancel_requested_at: now, ...this.cancels.waiting(now) } },
    )
    return result.modifiedCount === 1
  }

  /**
   * Takes a cancelled command's hand-off out of the outbox if no dispatcher
   * holds it (or its holder's lease ran out), so it is never dispatched;
   * true when it did. A live holder's hand-off goes ahead and its run is
   * stopped by the executor instead.
   */
  async withdrawDispatch(commandId: string, now: Date): Promise<boolean> {
    const result = await this.#commands.updateOne(
      { _id: commandId, dispatch_state: 'waiting', $or: [{ dispatch_claim: null }, { dispatch_due_at: { $lte: now } }] },
      { $set: { dispatch_state: 'done', dispatch_claim: null, dispatch_last_error: 'cancelled before its hand-off' } },
    )
    return result.modifiedCount === 1
  }

  /** Whether the command's hand-off is still to do or in progress. */
  async dispatchPending(commandId: string): Promise<boolean> {
    return (await this.#commands.countDocuments({ _id: commandId, dispatch_state: 'waiting' }, { limit: 1 })) === 1
  }

  /** Which of these commands have a cancel request (the local executor asks for its runs). */
  async cancelRequested(commandIds: readonly string[]): Promise<string[]> {
    if (commandIds.length === 0) return []
    const docs = await this.#commands.find({ _id: { $in: [...commandIds] }, cancel_requested_at: { $exists: true } }, { projection: { _id: 1 } }).toArray()
    return docs.map((doc) => doc._id)
  }

  // The status projector's reads and writes. Only it writes status, progress
  // and the result, and each of its writes names the projection_revision it
  // was computed from, so replicas sharing its consumer never undo each other.

  /** The record a projection round folds its events into: by id, whatever the account. */
  async findForProjection(commandId: string): Promise<CommandDocument | null> {
    return this.#commands.findOne({ _id: commandId })
  }

  /**
   * Writes a projection round's fields if the record is still at the
   * revision `read` was at, moving it to the next; false when another write
   * came first (the round then folds its events into a fresh read). The
   * write of a terminal status also gives back the account's slot and ends
   * the local executor's run (its runner reported this end, or the executor
   * did for it), so neither needs a write of its own.
   */
  async writeProjection(read: CommandDocument, set: Partial<CommandDocument>): Promise<boolean> {
    const revision = read.projection_revision
    const ended = set.status !== undefined && isTerminalStatus(set.status)
    if (ended) set = { ...set, dispatch_slot: null, ...(read.run_state === 'running' ? { run_state: 'ended' as const } : {}) }
    const expected: Filter<CommandDocument> = { _id: read._id, projection_revision: revision ?? { $exists: false } }
    const result = await this.#commands.updateOne(expected, { $set: { ...set, projection_revision: (revision ?? 0) + 1 } })
    // An ended command gives its account's slot back and wakes it (a crash before this leaves it to the dispatcher's stale check),
    // as of the projector's clock at this write (its completed_at; never the runner's event time, which a replay makes old).
    if (result.matchedCount === 1 && ended && read.dispatch_slot) await this.schedule.freeSlotOfEnded(read.account_id, read.dispatch_slot, set.completed_at ?? set.updated_at ?? new Date())
    return result.matchedCount === 1
  }
}
