/**
 * Where the code meets the embedded store's differences from MongoDB, each
 * written once. Local mode stores its records in FerretDB 1.x over SQLite
 * (docs/adr/0001-patched-ferretdb.md); a cluster uses MongoDB. Every query
 * elsewhere is written for MongoDB and is correct on both; what follows is
 * the few places where the embedded store needs another shape, and why:
 *
 * - A unique-index violation raised by an update (not an insert) comes back
 *   as an InternalError carrying SQLite's text instead of E11000.
 * - An index is searched by its leading field only: each top-level equality is
 *   pushed down to SQLite as an OR of its own (the value, or an array holding
 *   it), so SQLite searches one index by its leading field and FerretDB
 *   filters, sorts and compares ranges in Go, while SQLite still computes every
 *   indexed field (a JSON extraction each) on every write. Indexes are declared
 *   as equality fields then sort and range fields, and the embedded store gets
 *   the first field alone (api/store-indexes.ts, searchesLeadingIndexFieldOnly).
 * - No TTL indexes: collections with an expiry are swept by their writers
 *   (sweepExpired), and their reads check the expiry themselves.
 * - No partial indexes: a field that holds a unique value only while the
 *   record is active takes the record's own id otherwise (the storage
 *   destinations' `active_name`).
 * - `$sum` of a field in `$group` answers 0: sums over an account's records
 *   are added up while the records are read (the console's usage page).
 * - Dates are compared and sorted in Go after every matching record is read:
 *   the dispatcher reads an account's due commands once per burst rather
 *   than once per claim (api/dispatcher/due-commands.ts).
 *   The retention sweep names its due days (`expires_on`, a day string
 *   written beside `expires_at`), so its query is found by equality through
 *   an index and reads only the files of those days (FileRepository#expiredFiles,
 *   api/files/retention.ts's expiryFields).
 * - findOneAndUpdate takes no projection ("not implemented"): the fields not
 *   to hand on are dropped from the returned document instead (the yt-dlp
 *   cookies' sealed text, api/ytdlp-cookies/ytdlp-cookie-repository.ts).
 * - `$pull` with a condition matches nothing (an exact value and `$pullAll`
 *   work), and `$setOnInsert` of an empty array is dropped: the dispatcher's
 *   slot holders are plain strings, absent until the first slot is taken.
 */
import { MongoServerError, type Collection, type Db, type Document, type Filter } from 'mongodb'

/** MongoDB's code for a write refused by a unique index (also each failed write of a bulk insert). */
export const DUPLICATE_KEY_CODE = 11000

/** A write refused by a unique index: another writer created that key first. */
export function isDuplicateKey(err: unknown): boolean {
  return err instanceof MongoServerError && (err.code === DUPLICATE_KEY_CODE || err.message.includes('UNIQUE constraint failed'))
}

/** Deletes the records whose `expires_at` has passed: what a TTL index would do, done by the collection's writer. */
export async function sweepExpired<T extends Document & { expires_at: Date }>(collection: Collection<T>, now: Date): Promise<void> {
  await collection.deleteMany({ expires_at: { $lte: now } } as Filter<T>)
}

/** True on the embedded store, which answers buildInfo with its own version beside the MongoDB one it speaks. */
export async function searchesLeadingIndexFieldOnly(db: Db): Promise<boolean> {
  const info = await db.admin().command({ buildInfo: 1 })
  return 'ferretdbVersion' in info
}
