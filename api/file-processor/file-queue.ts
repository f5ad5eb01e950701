import type { Collection, Db } from 'mongodb'
import { isDuplicateKey } from '../duplicate-key.js'

/** A file waiting for the processor, and when it is next due. */
export interface FileQueueEntry {
  /** The file_id. */
  _id: string
  due_at: Date
}

/**
 * The file processor's work list: one small entry per file whose record is
 * `processing.state: 'pending'`, removed once the record is done. The
 * record's pending state is the intent; a recovery scan of `files` re-creates
 * any entry a crash kept from being written. It exists because FerretDB 1.x
 * answers every query but `{_id}` by scanning the collection, and `files`
 * grows by a record per output ever produced: polling it twice a second costs
 * more the longer the service runs, while this collection holds only the
 * files in flight.
 */
export class FileQueue {
  readonly #entries: Collection<FileQueueEntry>

  constructor(db: Db) {
    this.#entries = db.collection<FileQueueEntry>('file_queue')
  }

  async ensureIndexes(): Promise<void> {
    await this.#entries.createIndex({ due_at: 1 })
  }

  /** An entry for a pending file, due at once; false when it has one already. Written after the file's record. */
  async enqueue(fileId: string, now: Date): Promise<boolean> {
    try {
      await this.#entries.insertOne({ _id: fileId, due_at: now })
      return true
    } catch (err) {
      if (isDuplicateKey(err)) return false
      throw err
    }
  }

  async due(now: Date, limit: number): Promise<FileQueueEntry[]> {
    return this.#entries.find({ due_at: { $lte: now } }).sort({ due_at: 1 }).limit(limit).toArray()
  }

  /** Puts an entry off, e.g. until another processor's lease on the file ends. */
  async reschedule(fileId: string, dueAt: Date): Promise<void> {
    await this.#entries.updateOne({ _id: fileId }, { $set: { due_at: dueAt } })
  }

  async remove(fileId: string): Promise<void> {
    await this.#entries.deleteOne({ _id: fileId })
  }
}
