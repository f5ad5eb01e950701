import type { Collection, CreateIndexesOptions, Db, Document } from 'mongodb'

/** An index's keys, in order, each ascending (1) or descending (-1). */
export type IndexKeys = Record<string, 1 | -1>

/**
 * The indexes of one database, created for the server it is on. An index is
 * declared as its equality fields, then the fields it sorts or ranges over
 * (MongoDB's equality-sort-range order), and MongoDB gets the whole index.
 * The embedded store (FerretDB over SQLite, docs/adr/0001-patched-ferretdb.md)
 * gets the first equality field alone: it pushes each top-level equality down
 * to SQLite as an OR of its own (the value, or an array holding it), so SQLite
 * searches one index by its leading field and FerretDB filters, sorts and
 * compares ranges in Go. A further field would never be searched, yet SQLite
 * computes every indexed field of a document (a JSON extraction each) on every
 * insert and update (bench/index-cost.ts). Two indexes with the same first
 * field are then one.
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

  /** Asked once: FerretDB answers buildInfo with its own version beside the MongoDB one it speaks. */
  #isEmbedded(): Promise<boolean> {
    this.#embedded ??= this.#db
      .admin()
      .command({ buildInfo: 1 })
      .then(
        (info) => 'ferretdbVersion' in info,
        (err: unknown) => {
          this.#embedded = undefined // asked again by the next ensure, as a restarted store would be
          throw err
        },
      )
    return this.#embedded
  }
}
