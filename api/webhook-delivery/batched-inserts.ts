import { MongoBulkWriteError, type Collection, type OptionalUnlessRequiredId } from 'mongodb'

const DUPLICATE_KEY = 11000

/**
 * Unique-`_id` inserts, coalesced: the inserts asked for in one turn of the
 * event loop go to the server as one unordered `insertMany`, and each caller
 * learns whether its own document went in (true) or its `_id` was taken
 * (false). Each document is still its own insert; batching spares the
 * per-statement cost, which under a burst of webhooks is most of it
 * (bench/webhooks.ts).
 */
export class BatchedInserter<T extends { _id: string }> {
  readonly #collection: Collection<T>
  #queue: { doc: T; resolve: (inserted: boolean) => void; reject: (error: unknown) => void }[] = []

  constructor(collection: Collection<T>) {
    this.#collection = collection
  }

  insert(doc: T): Promise<boolean> {
    return new Promise((resolve, reject) => {
      this.#queue.push({ doc, resolve, reject })
      if (this.#queue.length === 1) setImmediate(() => this.#flush())
    })
  }

  #flush(): void {
    const batch = this.#queue
    this.#queue = []
    this.#collection.insertMany(batch.map((entry) => entry.doc as OptionalUnlessRequiredId<T>), { ordered: false }).then(
      () => batch.forEach((entry) => entry.resolve(true)),
      (error: unknown) => {
        if (!(error instanceof MongoBulkWriteError)) return batch.forEach((entry) => entry.reject(error))
        const failed = new Map<number, number>()
        for (const writeError of Array.isArray(error.writeErrors) ? error.writeErrors : [error.writeErrors]) failed.set(writeError.index, writeError.code)
        batch.forEach((entry, index) => {
          const code = failed.get(index)
          if (code === undefined) entry.resolve(true)
          else if (code === DUPLICATE_KEY) entry.resolve(false)
          else entry.reject(error)
        })
      },
    )
  }
}
