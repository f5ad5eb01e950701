import { MongoBulkWriteError, type Collection, type OptionalUnlessRequiredId } from 'mongodb'
import { DUPLICATE_KEY_CODE } from '../store-compatibility.js'

/**
 * Writes asked for in one turn of the event loop, sent to the server as one
 * batch: `run` gets them in the order asked and answers each. Under a burst
 * of webhooks the per-statement cost is most of a write's cost, so a batch of
 * sixteen costs little more than one (bench/webhooks.ts).
 */
export class PerTurnBatch<I, R> {
  readonly #run: (items: I[]) => Promise<R[]>
  #queue: { item: I; resolve: (result: R) => void; reject: (error: unknown) => void }[] = []

  constructor(run: (items: I[]) => Promise<R[]>) {
    this.#run = run
  }

  add(item: I): Promise<R> {
    return new Promise((resolve, reject) => {
      this.#queue.push({ item, resolve, reject })
      if (this.#queue.length === 1) setImmediate(() => this.#flush())
    })
  }

  #flush(): void {
    const batch = this.#queue
    this.#queue = []
    this.#run(batch.map((entry) => entry.item)).then(
      (results) => batch.forEach((entry, index) => entry.resolve(results[index]!)),
      (error: unknown) => batch.forEach((entry) => entry.reject(error)),
    )
  }
}

/**
 * Inserts documents with unique `_id`s in one unordered `insertMany`: true for
 * each document that went in, false for each whose `_id` was taken. Any other
 * error fails them all.
 */
export async function insertEach<T extends { _id: string }>(collection: Collection<T>, docs: readonly T[]): Promise<boolean[]> {
  try {
    await collection.insertMany(docs.map((doc) => doc as OptionalUnlessRequiredId<T>), { ordered: false })
    return docs.map(() => true)
  } catch (error) {
    if (!(error instanceof MongoBulkWriteError)) throw error
    const failed = new Map<number, number>()
    for (const writeError of Array.isArray(error.writeErrors) ? error.writeErrors : [error.writeErrors]) failed.set(writeError.index, writeError.code)
    if ([...failed.values()].some((code) => code !== DUPLICATE_KEY_CODE)) throw error
    return docs.map((_doc, index) => !failed.has(index))
  }
}
