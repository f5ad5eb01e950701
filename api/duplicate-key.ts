import { MongoServerError } from 'mongodb'

/** A write refused by a unique index: another writer created that key first. */
export function isDuplicateKey(err: unknown): boolean {
  return err instanceof MongoServerError && err.code === 11000
}
