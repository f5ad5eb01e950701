import type { AuthenticatedAccount } from '../accounts/account-repository.js'

/** Asks the store for the bytes the account may still store, or throws 403 STORAGE_QUOTA_EXCEEDED naming `what`. */
export type StorageRoomCheck = (account: AuthenticatedAccount, what: string) => Promise<number>

/**
 * The submit's storage-room check with one read of an account's usage record
 * at a time: submits of one account that arrive while its read is at the
 * store share that read's answer instead of each sending their own. The
 * answer is never older than the oldest of those requests, which is all the
 * check promises: it refuses an account already at its quota, while the
 * outputs themselves are counted (and refused) when they exist
 * (FileRepository#reserveOutputs).
 */
export class StorageRoomReads {
  readonly #inFlight = new Map<string, Promise<number>>()

  constructor(private readonly check: StorageRoomCheck) {}

  require(account: AuthenticatedAccount, what: string): Promise<number> {
    // The message names `what`, so only requests asking about the same field share an answer.
    const key = `${account.id}\u0000${account.plan}\u0000${what}`
    const shared = this.#inFlight.get(key)
    if (shared) return shared
    const read = this.check(account, what).finally(() => this.#inFlight.delete(key))
    this.#inFlight.set(key, read)
    return read
  }
}
