import { MongoServerError } from 'mongodb'

/**
 * A write refused by a unique index: the insert with a unique `_id` that the
 * code uses as its one atomic claim (FerretDB 1.x has no other), lost to
 * another writer.
 */
export function isDuplicateKey(err: unknown): boolean {
  return err instanceof MongoServerError && err.code === 11000
}
