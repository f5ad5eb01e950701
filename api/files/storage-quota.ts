/**
 * The per-plan storage quota: what each account holds in managed storage,
 * counted in one record per account (collection `storage_usage`, owned here).
 *
 * The record keeps `stored_bytes` and `held`, the bytes of every counted file
 * by its file id. A reservation is one conditional write that adds the
 * files to `held` and their size to `stored_bytes`, only if none of them is
 * held already and the total stays within the quota; a release is one write
 * that removes one id and its bytes, only if that id still holds that many.
 * So two uploads that each fit but not together cannot both land, and a
 * retried reservation or release (a replayed SUCCESS, a retaken store-file,
 * a second DELETE) changes nothing: `stored_bytes` is always the sum of
 * `held`. Every writer reserves before it writes the file's record and
 * releases after it marks the record deleted, so a crash between the two
 * leaves the count too high, never too low (docs/api/plans-and-limits.md).
 */
import type { Collection, Db } from 'mongodb'
import type { Plan } from '../accounts/plans.js'
import { ApiError } from '../errors/api-errors.js'
import { isDuplicateKey } from '../store-compatibility.js'
import { describeBytes } from '../../contracts/storage-room.js'

/** Bytes of managed storage per plan; 0 = unlimited. */
export type StorageQuotas = Record<Plan, number>

const GIB = 1024 ** 3

/** STORAGE_QUOTA_<PLAN>_BYTES's defaults: 1 GiB, 5 GiB, 100 GiB, 1 TiB. */
export const DEFAULT_STORAGE_QUOTAS: StorageQuotas = { free: 1 * GIB, trial: 5 * GIB, growth: 100 * GIB, business: 1024 * GIB }

/** 403 STORAGE_QUOTA_EXCEEDED: an upload or command would pass the plan's storage quota (not a spec code; a plan limit, like FORBIDDEN's). */
export class StorageQuotaExceeded extends ApiError {
  override name = 'StorageQuotaExceeded'
  readonly statusCode = 403
  readonly code = 'STORAGE_QUOTA_EXCEEDED'
}

/** The error_status of a command or store-file whose bytes would pass the quota. */
export const STORAGE_QUOTA_EXCEEDED = 'STORAGE_QUOTA_EXCEEDED'

/** One file to count: its file id and its bytes in managed storage. */
export interface StorageHold {
  id: string
  bytes: number
}

/** An account's standing: bytes counted, and its plan's quota (null: unlimited). */
export interface StorageStanding {
  storedBytes: number
  quotaBytes: number | null
}

export type Reservation = { reserved: true } | ({ reserved: false } & StorageStanding & { requestedBytes: number })

interface StorageUsageDocument {
  /** The account id. */
  _id: string
  stored_bytes: number
  held: Record<string, number>
}

export { describeBytes }

/** What a refused reservation tells the client: the size, the room left, the quota, and what to do. */
export function refusalMessage(what: string, refused: Exclude<Reservation, { reserved: true }>): string {
  const quota = refused.quotaBytes ?? 0
  const free = Math.max(0, quota - refused.storedBytes)
  return (
    `${what} ${describeBytes(refused.requestedBytes)}, ${describeBytes(refused.requestedBytes - free)} more than the ${describeBytes(free)} left of ` +
    `the plan's storage quota of ${describeBytes(quota)}; delete files (DELETE /api/v1/files/:fileId) or wait for them to expire`
  )
}

/** Conditional writes a reservation tries while other writers keep changing the account's record. */
const MAX_RESERVE_ATTEMPTS = 20

export class StorageQuota {
  readonly #usage: Collection<StorageUsageDocument>

  constructor(
    db: Db,
    private readonly quotas: StorageQuotas,
    private readonly planOf: (accountId: string) => Promise<Plan | null>,
  ) {
    this.#usage = db.collection<StorageUsageDocument>('storage_usage')
  }

  /** The plan's quota in bytes; null when unlimited (0) or the account is gone. `plan`: when the caller knows it (a request's account), no read. */
  async quotaOf(accountId: string, plan?: Plan): Promise<number | null> {
    const known = plan ?? (await this.planOf(accountId))
    const quota = known === null ? 0 : this.quotas[known]
    return quota === 0 ? null : quota
  }

  async standing(accountId: string, plan?: Plan): Promise<StorageStanding> {
    const [doc, quotaBytes] = await Promise.all([this.#usage.findOne({ _id: accountId }, { projection: { stored_bytes: 1 } }), this.quotaOf(accountId, plan)])
    return { storedBytes: doc?.stored_bytes ?? 0, quotaBytes }
  }

  /**
   * The bytes a command's managed outputs may take, told to its runner at
   * hand-off (CommandSpec.storageRoomBytes): the room its account has left,
   * 0 when at or over the quota; null when no quota applies (an unlimited
   * plan, or outputs bound for a storage destination, which are not counted).
   * `plan`: when the caller knows it (the dispatcher's cached plan), as quotaOf.
   */
  async roomFor(command: { account_id: string; storage_destination_id: string | null }, plan?: Plan): Promise<number | null> {
    if (command.storage_destination_id !== null) return null
    const { storedBytes, quotaBytes } = await this.standing(command.account_id, plan)
    return quotaBytes === null ? null : Math.max(0, quotaBytes - storedBytes)
  }

  /**
   * The bytes the account may still store (Infinity when unlimited); throws
   * 403 STORAGE_QUOTA_EXCEEDED naming `what` when it is at or over its quota:
   * what is refused before its size is known (a command's outputs, a
   * store-file URL, an upload before its body is read).
   */
  async requireRoom(accountId: string, what: string, plan?: Plan): Promise<number> {
    const { storedBytes, quotaBytes } = await this.standing(accountId, plan)
    if (quotaBytes === null) return Infinity
    if (storedBytes < quotaBytes) return quotaBytes - storedBytes
    throw new StorageQuotaExceeded(
      `${what}: the account stores ${describeBytes(storedBytes)}, all of the plan's storage quota of ${describeBytes(quotaBytes)}; delete files (DELETE /api/v1/files/:fileId) or wait for them to expire`,
    )
  }

  /**
   * Counts `holds` in one conditional write if they fit together; a hold set
   * already counted (a retry) is reserved. Nothing is written when refused.
   * `plan`: when the caller knows it, as quotaOf.
   */
  async reserve(accountId: string, holds: readonly StorageHold[], plan?: Plan): Promise<Reservation> {
    if (holds.length === 0) return { reserved: true }
    const total = holds.reduce((sum, hold) => sum + hold.bytes, 0)
    const quotaBytes = await this.quotaOf(accountId, plan)
    const unheld = Object.fromEntries(holds.map((hold) => [`held.${hold.id}`, { $exists: false }]))
    const fits = quotaBytes === null ? {} : { stored_bytes: { $lte: quotaBytes - total } }
    const write = async () =>
      (
        await this.#usage.updateOne(
          { _id: accountId, ...unheld, ...fits },
          { $inc: { stored_bytes: total }, $set: Object.fromEntries(holds.map((hold) => [`held.${hold.id}`, hold.bytes])) },
        )
      ).matchedCount === 1
    const read = () => this.#usage.findOne({ _id: accountId }, { projection: this.#fields(holds.map((hold) => hold.id)) })
    // A write that matched nothing is explained by the record read after it; a record that would have
    // admitted it changed in between (another reservation created or moved it), so the write is tried again.
    for (let attempt = 1; attempt <= MAX_RESERVE_ATTEMPTS; attempt++) {
      if (await write()) return { reserved: true }
      const doc = await read()
      if (!doc) {
        // The account's first file: its record, then the same conditional write.
        await this.#ensureRecord(accountId)
        continue
      }
      if (holds.every((hold) => doc.held?.[hold.id] !== undefined)) return { reserved: true }
      const noneHeld = holds.every((hold) => doc.held?.[hold.id] === undefined)
      const room = quotaBytes === null || doc.stored_bytes <= quotaBytes - total
      if (!noneHeld || !room) return { reserved: false, storedBytes: doc.stored_bytes, quotaBytes, requestedBytes: total }
    }
    // Never a refusal it cannot explain: the caller's work is retried instead (the projector's event is redelivered).
    throw new Error(`the storage count of ${accountId} changed under ${MAX_RESERVE_ATTEMPTS} reservations in a row`)
  }

  /** Stops counting a file; returns the bytes freed (0 when it was not counted, or released already). */
  async release(accountId: string, id: string): Promise<number> {
    const doc = await this.#usage.findOne({ _id: accountId }, { projection: this.#fields([id]) })
    const bytes = doc?.held?.[id]
    if (bytes === undefined) return 0
    const written = await this.#usage.updateOne({ _id: accountId, [`held.${id}`]: bytes }, { $unset: { [`held.${id}`]: '' }, $inc: { stored_bytes: -bytes } })
    return written.matchedCount === 1 ? bytes : 0
  }

  /**
   * Frees what a crash left counted: holds whose file holds no bytes, as
   * `filesHolding` tells (deleted or FAILED: `gone`; never recorded: absent).
   * A gone file's hold is released at once; a missing one only if it is still
   * missing after `settle()`, so an upload or output between its reservation
   * and its record's write is not taken for one a crash left. Returns the
   * bytes freed by file id.
   */
  async repair(accountId: string, filesHolding: (ids: string[]) => Promise<Map<string, 'live' | 'gone'>>, settle: () => Promise<void>): Promise<Record<string, number>> {
    const held = Object.keys((await this.#usage.findOne({ _id: accountId }))?.held ?? {})
    const states = await filesHolding(held)
    const gone = held.filter((id) => states.get(id) === 'gone')
    let missing = held.filter((id) => !states.has(id))
    if (missing.length > 0) {
      await settle()
      const again = await filesHolding(missing)
      missing = missing.filter((id) => again.get(id) !== 'live')
    }
    const released: Record<string, number> = {}
    for (const id of [...gone, ...missing]) {
      const bytes = await this.release(accountId, id)
      if (bytes > 0) released[id] = bytes
    }
    return released
  }

  /** A projection of the count and these files' holds: an account's record holds one entry per stored file, read only as far as needed. */
  #fields(ids: readonly string[]): Record<string, 1> {
    return { stored_bytes: 1, ...Object.fromEntries(ids.map((id) => [`held.${id}`, 1])) }
  }

  /** The account's record with nothing counted, if it has none yet; a concurrent creation is as good. */
  async #ensureRecord(accountId: string): Promise<void> {
    try {
      await this.#usage.updateOne({ _id: accountId }, { $setOnInsert: { stored_bytes: 0, held: {} } }, { upsert: true })
    } catch (err) {
      if (!isDuplicateKey(err)) throw err
    }
  }
}
