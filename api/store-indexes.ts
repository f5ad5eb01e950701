import type { Collection, CreateIndexesOptions, Db, Document } from 'mongodb'
import { searchesLeadingIndexFieldOnly } from './store-compatibility.js'

/** An index's keys, in order, each ascending (1) or descending (-1). */
export type IndexKeys = Record<string, 1 | -1>

/**
 * The indexes of one database, created for the server it is on. An index is
 * declared as its equality fields, then the fields it sorts or ranges over
 * (MongoDB's equality-sort-range order), and MongoDB gets the whole index.
 * A store that searches an index by its leading field alone (the embedded
 * one: api/store-compatibility.ts) gets that field alone: a further field
 * would never be searched, yet it computes every indexed field of a document
 * on every insert and update (bench/index-cost.ts). Two indexes with the same
 * first field are then one.
 */
export class StoreIndexes {
  readonly #db: Db
  #embedded: Promise<boolean> | undefined

  constructor(db: Db) {
    this.#db = db
  }

  /** Creates the index of `equal` then `order` fields on `collection` (a collection of this database). */
  async ensure<T extends Document>(collection: Collection<T>, equal: IndexKeys, order: IndexKeys = {}, options: CreateIndexesOptions = {}): Promise<void> {
    const [leading] = Object.entries(equal)
    // A unique index keeps every field on both: together they are what is unique.
    const cut = leading !== undefined && options.unique !== true && (await this.#isEmbedded())
    const keys = cut ? { [leading[0]]: leading[1] } : { ...equal, ...order }
    await collection.createIndex(keys, options)
  }

  /** Asked once, and again after a failure, as a restarted store would be. */
  #isEmbedded(): Promise<boolean> {
    this.#embedded ??= searchesLeadingIndexFieldOnly(this.#db).catch((err: unknown) => {
      this.#embedded = undefined
      throw err
    })
    return this.#embedded
  }
}
