import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import type { Collection, Db, Filter } from 'mongodb'
import type { CommandStatus } from '../../contracts/command-types.js'
import type { CommandDocument } from './command-document.js'

/** The name both the API and the dispatcher use. */
export const COMMANDS_COLLECTION = 'commands'

export function commandsCollection(db: Db): Collection<CommandDocument> {
  return db.collection<CommandDocument>(COMMANDS_COLLECTION)
}

/** Commands in MongoDB, always read within one account. */
export class CommandRepository {
  readonly #commands: Collection<CommandDocument>

  constructor(db: Db) {
    this.#commands = commandsCollection(db)
  }

  /** One index per query shape: the list (with and without status) and the dispatcher's recovery scan. */
  async ensureIndexes(): Promise<void> {
    await this.#commands.createIndex({ account_id: 1, created_at: -1, _id: -1 })
    await this.#commands.createIndex({ account_id: 1, status: 1, created_at: -1, _id: -1 })
    await this.#commands.createIndex({ 'dispatch.state': 1 })
  }

  /**
   * Records accepted commands, each with its pending dispatch in the same
   * document. Ordered, so a failure leaves a prefix written: those are
   * dispatched like any other (the client got an error and may resubmit).
   */
  async insert(docs: readonly CommandDocument[]): Promise<void> {
    if (docs.length === 1) await this.#commands.insertOne(docs[0]!)
    else await this.#commands.insertMany([...docs], { ordered: true })
  }

  /**
   * The command if it is the account's. Looked up by _id alone, ownership
   * checked here: FerretDB 1.x uses its primary key only for a filter that is
   * exactly `{_id}`, and scans the whole collection for anything more.
   */
  async find(accountId: string, commandId: string): Promise<CommandDocument | null> {
    const doc = await this.#commands.findOne({ _id: commandId })
    return doc && doc.account_id === accountId ? doc : null
  }

  /** The account's commands, newest first; ties broken by id so pages never overlap. */
  async list(accountId: string, page: { limit: number; offset: number; status?: CommandStatus | undefined }): Promise<CommandDocument[]> {
    const filter: Filter<CommandDocument> = { account_id: accountId }
    if (page.status) filter.status = page.status
    return this.#commands.find(filter).sort({ created_at: -1, _id: -1 }).skip(page.offset).limit(page.limit).toArray()
  }

  /** Marks one managed output deleted in the command's result; true when it changed. */
  async markOutputDeleted(commandId: string, alias: string, now: Date): Promise<boolean> {
    const result = await this.#commands.updateOne(
      { _id: commandId, [`output_results.${alias}.is_deleted`]: false },
      { $set: { [`output_results.${alias}.is_deleted`]: true, [`output_results.${alias}.storage_url`]: null, updated_at: now } },
    )
    return result.modifiedCount === 1
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
   * came first (the round then folds its events into a fresh read).
   */
  async writeProjection(read: CommandDocument, set: Partial<CommandDocument>): Promise<boolean> {
    const revision = read.projection_revision
    const expected: Filter<CommandDocument> = { _id: read._id, projection_revision: revision ?? { $exists: false } }
    const result = await this.#commands.updateOne(expected, { $set: { ...set, projection_revision: (revision ?? 0) + 1 } })
    return result.matchedCount === 1
  }
}

declare module 'fastify' {
  interface FastifyInstance {
    commands: CommandRepository
  }
}

/** Decorates the app with `commands`. */
export const commandRepository = fp(
  async (app: FastifyInstance, options: { db: Db }) => {
    const repository = new CommandRepository(options.db)
    await repository.ensureIndexes()
    app.decorate('commands', repository)
  },
  { name: 'command-repository' },
)
