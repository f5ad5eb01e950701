import type { Collection, Db } from 'mongodb'
import type { CommandSpec } from '../../contracts/command-spec.js'
import { isDuplicateKey } from '../duplicate-key.js'

/** When a pending command is next due for a hand-off, and how many it has had. */
export interface QueueEntry {
  /** The command_id. */
  _id: string
  due_at: Date
  attempts: number
  last_error: string | null
  /** Written by the recovery scan: dropped, not run, if the command turns out claimed already. */
  recovered: boolean
  /**
   * The command's spec, copied at acceptance (the fields it is built from never
   * change), so a hand-off need not read the record; absent on entries the
   * recovery scan wrote and on entries older than this field.
   */
  spec?: CommandSpec
  /**
   * Set with a failed attempt's backoff: that attempt marked the record
   * claimed, so later ones need not read it. Absent is "not known".
   */
  claimed?: boolean
}

/**
 * The dispatcher's work list: one small entry per command not yet handed
 * off, removed once it is. The record's `dispatch.state: 'pending'`, written
 * in the same insert as the record, is the intent; a recovery scan re-creates
 * any entry a crash kept from being written. Once the dispatcher has claimed
 * a command (`dispatch.state: 'claimed'`), the entry is the only trace of
 * work left to do. It exists because FerretDB 1.x answers every query
 * but `{_id}` by scanning the collection, and scanning every command ever
 * accepted on each poll would not last.
 */
export class DispatchQueue {
  readonly #entries: Collection<QueueEntry>

  constructor(db: Db) {
    this.#entries = db.collection<QueueEntry>('dispatch_queue')
  }

  async ensureIndexes(): Promise<void> {
    await this.#entries.createIndex({ due_at: 1 })
  }

  /** Entries for freshly accepted commands, due at once, each carrying its spec. */
  async enqueue(specs: readonly CommandSpec[], now: Date): Promise<void> {
    if (specs.length === 0) return
    await this.#entries.insertMany(specs.map((spec) => ({ _id: spec.commandId, due_at: now, attempts: 0, last_error: null, recovered: false, spec })), { ordered: false })
  }

  /** An entry for a pending command found by the recovery scan; false when it has one already. */
  async ensure(commandId: string, now: Date): Promise<boolean> {
    try {
      await this.#entries.insertOne({ _id: commandId, due_at: now, attempts: 0, last_error: null, recovered: true })
      return true
    } catch (err) {
      if (isDuplicateKey(err)) return false
      throw err
    }
  }

  /**
   * The first `limit` due entries but those in `excluding` (the ones this
   * process is on or knows another dispatcher holds), so they do not crowd
   * the rest out. A scan on FerretDB 1.x however it is filtered.
   */
  async due(now: Date, limit: number, excluding: readonly string[] = []): Promise<QueueEntry[]> {
    const filter = excluding.length > 0 ? { due_at: { $lte: now }, _id: { $nin: [...excluding] } } : { due_at: { $lte: now } }
    return this.#entries.find(filter).sort({ due_at: 1 }).limit(limit).toArray()
  }

  /** Every command id in the queue (a full scan: the recovery scan's lease pruning only). */
  async ids(): Promise<Set<string>> {
    const entries = await this.#entries.find({}, { projection: { _id: 1 } }).toArray()
    return new Set(entries.map((entry) => entry._id))
  }

  async get(commandId: string): Promise<QueueEntry | null> {
    return this.#entries.findOne({ _id: commandId })
  }

  /** Written only by the dispatcher holding the entry's lease. */
  async reschedule(commandId: string, fields: Partial<Omit<QueueEntry, '_id'>>): Promise<void> {
    await this.#entries.updateOne({ _id: commandId }, { $set: fields })
  }

  async remove(commandId: string): Promise<void> {
    await this.#entries.deleteOne({ _id: commandId })
  }
}
