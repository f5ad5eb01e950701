import type { Collection } from 'mongodb'
import { GroupedTurns } from '../grouped-turns.js'
import { POLL_FIELDS, type CommandDocument, type PollFields } from './command-document.js'

/** Ids per read: fewer than the 101 documents of a find's first reply, so a read is one round trip. */
const MAX_IDS_PER_READ = 100

/** A read for GET: the fields it shows, and whose command it is. */
const READ_PROJECTION = Object.fromEntries([...POLL_FIELDS, 'account_id'].map((field) => [field, 1]))

type PollRecord = PollFields & Pick<CommandDocument, 'account_id'>

/** One GET waiting for its command, and how it learns the outcome. */
interface Waiter {
  accountId: string
  commandId: string
  resolve: (doc: PollFields | null) => void
  reject: (error: unknown) => void
}

/**
 * GET /commands/:id's reads of the store, sent as group reads: the GETs that
 * arrive while one read is at the store go out together in the next, as one
 * `find` of their ids. A read's store cost is mostly per statement, not per
 * document (the embedded store spends ~1 ms of CPU on a findOne of one
 * command), so a group of twenty costs little more than one; when GETs are
 * rare each goes out alone on the next turn of the event loop.
 *
 * A GET never joins a read already sent: that read may have been answered by
 * the store before the request arrived, and a client that saw the command
 * end (on another replica, by its event stream or a webhook) would then be
 * shown it running. Each answer is as recent as the store was when its
 * request arrived, or later, as with a read of its own.
 */
export class PollReads {
  readonly #turns = new GroupedTurns<Waiter>((batch) => this.#read(batch), MAX_IDS_PER_READ)

  constructor(private readonly commands: Collection<CommandDocument>) {}

  /** The command's fields GET shows, if it is the account's; null when there is none or it is another's. */
  read(accountId: string, commandId: string): Promise<PollFields | null> {
    return new Promise((resolve, reject) => this.#turns.add({ accountId, commandId, resolve, reject }))
  }

  async #read(batch: Waiter[]): Promise<void> {
    try {
      const found = await this.#find([...new Set(batch.map((waiter) => waiter.commandId))])
      for (const waiter of batch) {
        const doc = found.get(waiter.commandId)
        // Another account's command is reported as missing (spec: 404), as a filter on account_id would.
        waiter.resolve(doc && doc.account_id === waiter.accountId ? doc : null)
      }
    } catch (error) {
      for (const waiter of batch) waiter.reject(error)
    }
  }

  async #find(ids: readonly string[]): Promise<Map<string, PollRecord>> {
    const docs =
      ids.length === 1
        ? [await this.commands.findOne<PollRecord>({ _id: ids[0]! }, { projection: READ_PROJECTION })]
        : await this.commands.find<PollRecord>({ _id: { $in: [...ids] } }, { projection: READ_PROJECTION }).toArray()
    return new Map(docs.filter((doc): doc is PollRecord => doc !== null).map((doc) => [doc._id, doc]))
  }
}
