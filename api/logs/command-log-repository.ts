import type { Collection, Db } from 'mongodb'
import { isDuplicateKey } from '../store-compatibility.js'
import type { LogRecord } from './log-record.js'

/** Read and written here alone: the log projector writes, the API reads. */
const COMMAND_LOGS_COLLECTION = 'command_logs'

/**
 * Commands' logs (the tools' stderr, the last 256 KiB), one document per
 * command with the command's id, kept as long as the command: nothing
 * deletes a command record, and so nothing deletes its log.
 */
export class CommandLogRepository {
  readonly #logs: Collection<LogRecord>

  constructor(db: Db) {
    this.#logs = db.collection<LogRecord>(COMMAND_LOGS_COLLECTION)
  }

  async find(commandId: string): Promise<LogRecord | null> {
    return this.#logs.findOne({ _id: commandId })
  }

  /**
   * Writes a command's log if it is still as `read` found it (absent, or at
   * its revision); false when another writer came first.
   */
  async write(commandId: string, read: LogRecord | null, next: Pick<LogRecord, 'parts' | 'truncated'>): Promise<boolean> {
    if (!read) {
      try {
        await this.#logs.insertOne({ _id: commandId, ...next, revision: 1 })
        return true
      } catch (err) {
        if (isDuplicateKey(err)) return false
        throw err
      }
    }
    const result = await this.#logs.updateOne({ _id: commandId, revision: read.revision }, { $set: { ...next, revision: read.revision + 1 } })
    return result.matchedCount === 1
  }
}
