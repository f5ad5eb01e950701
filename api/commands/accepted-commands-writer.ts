import { MongoBulkWriteError, MongoServerError, type Collection, type WriteError } from 'mongodb'
import type { AccountSchedule } from '../dispatcher/account-schedule.js'
import { GroupedTurns } from '../grouped-turns.js'
import type { CommandDocument } from './command-document.js'

/** One request's accepted commands, and how its submitter learns the outcome. */
interface Submission {
  docs: readonly CommandDocument[]
  resolve: () => void
  reject: (error: unknown) => void
}

/**
 * Writes accepted commands as a group commit: the submissions that arrive
 * while one write is at the store go out together in the next, as one
 * unordered `insertMany` and one schedule bump per account. A submit's store
 * cost is mostly per statement, not per document (the embedded store's ~1.8 ms of CPU
 * per insertOne capped submits near 550/s on one core), so a batch of twenty
 * costs little more than one; when requests are rare, each goes out alone
 * on the next turn of the event loop.
 *
 * Each submitter learns its own outcome: a document refused in the batch (a
 * taken `_id`) fails its own submission only, and a batch the driver or the
 * store refused whole (a document over the size limit) is written again one
 * submission at a time, so one bad request never fails its neighbours. As
 * with an ordered insert, a request of several commands that fails part-way
 * may leave some of them written: those are dispatched like any other (the
 * client got an error and may resubmit).
 */
export class AcceptedCommandsWriter {
  readonly #turns = new GroupedTurns<Submission>((batch) => this.#write(batch))

  constructor(
    private readonly commands: Collection<CommandDocument>,
    private readonly schedule: AccountSchedule,
  ) {}

  /** Records the documents, then announces their accounts to the dispatcher; resolves when both are done. */
  write(docs: readonly CommandDocument[]): Promise<void> {
    return new Promise((resolve, reject) => this.#turns.add({ docs, resolve, reject }))
  }

  async #write(batch: Submission[]): Promise<void> {
    try {
      const failures = await this.#insert(batch)
      await this.#announce(batch, failures)
      batch.forEach((submission, i) => {
        const failure = failures.get(i)
        if (failure === undefined) submission.resolve()
        else submission.reject(failure)
      })
    } catch (error) {
      // Never leave a submitter waiting: whatever escaped answers the batch (a settled submission ignores it).
      for (const submission of batch) submission.reject(error)
    }
  }

  /** Inserts the batch; the error of each submission that failed, by its index in the batch. */
  async #insert(batch: readonly Submission[]): Promise<Map<number, unknown>> {
    const docs = batch.flatMap((submission) => submission.docs)
    const owner = batch.flatMap((submission, i) => submission.docs.map(() => i))
    const failures = new Map<number, unknown>()
    try {
      await (docs.length === 1 ? this.commands.insertOne(docs[0]!) : this.commands.insertMany(docs, { ordered: false }))
      return failures
    } catch (error) {
      if (error instanceof MongoBulkWriteError && batch.length > 1) {
        const writeErrors = Array.isArray(error.writeErrors) ? error.writeErrors : [error.writeErrors]
        // Each refused document fails the submission it came from, with the error its own insert would have had.
        for (const writeError of writeErrors) if (!failures.has(owner[writeError.index]!)) failures.set(owner[writeError.index]!, serverErrorOf(writeError))
        if (writeErrors.length > 0) return failures
      }
      if (batch.length === 1) return new Map([[0, error]])
      // Refused whole: which submission caused it is learnt by writing each alone.
      for (const [i, submission] of batch.entries()) {
        const alone = await this.#insert([submission])
        if (alone.has(0)) failures.set(i, alone.get(0))
      }
      return failures
    }
  }

  /**
   * After the records, so a dispatcher that sees an account's bump finds them
   * (a crash in between leaves the account unannounced: a dispatcher that
   * finds no account due finds it, CommandRepository#unannouncedAccount).
   * One bump per account, at its earliest command; a failed bump fails its
   * account's submissions.
   */
  async #announce(batch: readonly Submission[], failures: Map<number, unknown>): Promise<void> {
    const earliest = new Map<string, Date>()
    for (const [i, submission] of batch.entries()) {
      if (failures.has(i)) continue
      for (const doc of submission.docs) {
        const known = earliest.get(doc.account_id)
        if (!known || doc.created_at < known) earliest.set(doc.account_id, doc.created_at)
      }
    }
    await Promise.all(
      [...earliest].map(async ([accountId, at]) => {
        try {
          await this.schedule.enqueue(accountId, at)
        } catch (error) {
          for (const [i, submission] of batch.entries()) if (!failures.has(i) && submission.docs.some((doc) => doc.account_id === accountId)) failures.set(i, error)
        }
      }),
    )
  }
}

/** A refused document's error as a lone insert reports it (isDuplicateKey and the error handler know that shape). */
function serverErrorOf(writeError: WriteError): MongoServerError {
  return new MongoServerError({ message: writeError.errmsg ?? `write refused with code ${writeError.code}`, errmsg: writeError.errmsg, code: writeError.code })
}
