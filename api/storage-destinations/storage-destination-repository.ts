import type { Collection, Db } from 'mongodb'
import { isDuplicateKey } from '../store-compatibility.js'
import type { DestinationCredentials } from '../../contracts/destination-credentials.js'
import type { AuthenticatedAccount } from '../accounts/account-repository.js'
import { planFeatures } from '../accounts/plans.js'
import { systemClock, type Clock } from '../clock.js'
import type { SealedValue, SecretBox } from '../crypto/secret-box.js'
import { ConflictError, ForbiddenError, NotFoundError, ValidationError } from '../errors/api-errors.js'
import { newId } from '../ids.js'
import { isStorageDestinationId } from './storage-destination-id.js'

/** The credentials a destination's bucket is reached with; only ever stored sealed. */
export interface StorageCredentials {
  access_key_id: string
  secret_access_key: string
  session_token?: string | undefined
}

/** A customer-owned S3-compatible bucket that a Business account's outputs go to. */
export interface StorageDestinationDocument {
  _id: string
  account_id: string
  name: string
  /**
   * The name while the destination is active, its own id once disabled: a
   * unique index on (account_id, active_name) keeps names unique among active
   * destinations without a partial index (api/store-compatibility.ts).
   */
  active_name: string
  endpoint_url: string
  region: string
  bucket: string
  /** Without leading or trailing slashes; '' for the bucket's root. */
  prefix: string
  public_base_url: string | null
  path_style: boolean
  /** JSON of StorageCredentials, sealed with the SecretBox. */
  credentials_sealed: SealedValue
  /** e.g. `AKIA…WXYZ`: all a response ever shows of the credentials. */
  access_key_id_masked: string
  is_active: boolean
  disabled_at: Date | null
  created_at: Date
  updated_at: Date
}

/** What creating a destination takes, already validated and normalised. */
export interface NewStorageDestination extends Pick<StorageDestinationDocument, 'name' | 'endpoint_url' | 'region' | 'bucket' | 'prefix' | 'public_base_url' | 'path_style'> {
  credentials: StorageCredentials
}

/** The mutable fields; endpoint_url, region and bucket never change. */
export interface StorageDestinationChanges {
  name?: string | undefined
  prefix?: string | undefined
  public_base_url?: string | null | undefined
  path_style?: boolean | undefined
  credentials?: StorageCredentials | undefined
}

/**
 * Shows the first and last four characters of an access key id, e.g.
 * `AKIA…WXYZ`. Characters, not UTF-16 units: a cut through a surrogate pair
 * would put a lone surrogate in every response that shows the destination.
 */
export function maskAccessKeyId(accessKeyId: string): string {
  const chars = [...accessKeyId]
  if (chars.length <= 8) return '…' + chars.slice(-Math.min(2, Math.floor(chars.length / 2))).join('')
  return `${chars.slice(0, 4).join('')}…${chars.slice(-4).join('')}`
}

/** Storage destinations in MongoDB, always looked up within one account. */
export class StorageDestinationRepository {
  readonly #destinations: Collection<StorageDestinationDocument>
  readonly #box: SecretBox
  readonly #now: Clock

  constructor(db: Db, box: SecretBox, now: Clock = systemClock) {
    this.#destinations = db.collection('storage_destinations')
    this.#box = box
    this.#now = now
  }

  async ensureIndexes(): Promise<void> {
    await this.#destinations.createIndex({ account_id: 1, active_name: 1 }, { unique: true })
    await this.#destinations.createIndex({ account_id: 1, created_at: -1 })
  }

  /** Creates a destination; ConflictError when the account has an active one of that name. */
  async create(accountId: string, input: NewStorageDestination): Promise<StorageDestinationDocument> {
    const now = this.#now()
    const doc: StorageDestinationDocument = {
      _id: newId('sd'),
      account_id: accountId,
      name: input.name,
      active_name: input.name,
      endpoint_url: input.endpoint_url,
      region: input.region,
      bucket: input.bucket,
      prefix: input.prefix,
      public_base_url: input.public_base_url,
      path_style: input.path_style,
      credentials_sealed: this.#sealCredentials(input.credentials),
      access_key_id_masked: maskAccessKeyId(input.credentials.access_key_id),
      is_active: true,
      disabled_at: null,
      created_at: now,
      updated_at: now,
    }
    try {
      await this.#destinations.insertOne(doc)
    } catch (err) {
      if (isDuplicateKey(err)) throw new ConflictError(`name: a storage destination named "${input.name}" already exists`)
      throw err
    }
    return doc
  }

  /** The account's destinations, newest first, disabled ones included. */
  async list(accountId: string, limit: number, offset: number): Promise<StorageDestinationDocument[]> {
    return this.#destinations.find({ account_id: accountId }).sort({ created_at: -1, _id: -1 }).skip(offset).limit(limit).toArray()
  }

  /** The destination if it exists and is the account's; null otherwise (malformed ids included). */
  async find(accountId: string, id: string): Promise<StorageDestinationDocument | null> {
    if (!isStorageDestinationId(id)) return null
    return this.#destinations.findOne({ _id: id, account_id: accountId })
  }

  /** Applies changes to an account's destination; null when there is none. */
  async update(accountId: string, id: string, changes: StorageDestinationChanges): Promise<StorageDestinationDocument | null> {
    const existing = await this.find(accountId, id)
    if (!existing) return null
    const set: Partial<StorageDestinationDocument> = { updated_at: this.#now() }
    if (changes.name !== undefined) {
      set.name = changes.name
      if (existing.is_active) set.active_name = changes.name
    }
    if (changes.prefix !== undefined) set.prefix = changes.prefix
    if (changes.public_base_url !== undefined) set.public_base_url = changes.public_base_url
    if (changes.path_style !== undefined) set.path_style = changes.path_style
    if (changes.credentials !== undefined) {
      set.credentials_sealed = this.#sealCredentials(changes.credentials)
      set.access_key_id_masked = maskAccessKeyId(changes.credentials.access_key_id)
    }
    try {
      return await this.#destinations.findOneAndUpdate({ _id: id, account_id: accountId }, { $set: set }, { returnDocument: 'after' })
    } catch (err) {
      if (isDuplicateKey(err)) throw new ConflictError(`name: a storage destination named "${changes.name}" already exists`)
      throw err
    }
  }

  /**
   * Disables a destination for future commands; its bucket is left alone. The
   * name is freed for a new destination. Null when there is none; disabling
   * twice is a no-op that returns the destination.
   */
  async disable(accountId: string, id: string): Promise<StorageDestinationDocument | null> {
    const existing = await this.find(accountId, id)
    if (!existing) return null
    if (!existing.is_active) return existing
    const now = this.#now()
    return this.#destinations.findOneAndUpdate(
      { _id: id, account_id: accountId, is_active: true },
      { $set: { is_active: false, disabled_at: now, active_name: id, updated_at: now } },
      { returnDocument: 'after' },
    )
  }

  /**
   * The destination a command submission names, checked in the spec's order:
   * 422 for a malformed id, 403 off the Business plan, 404 when missing or
   * another account's, 409 when disabled.
   */
  async requireUsable(account: AuthenticatedAccount, id: string): Promise<StorageDestinationDocument> {
    if (!isStorageDestinationId(id)) {
      throw new ValidationError('storage_destination_id: must be sd_ followed by 32 lowercase hex characters')
    }
    if (!planFeatures(account.plan).businessFeatures) {
      throw new ForbiddenError('storage_destination_id: storage destinations require the Business plan')
    }
    const destination = await this.find(account.id, id)
    if (!destination) throw new NotFoundError(`storage_destination_id: no storage destination ${id}`)
    if (!destination.is_active) throw new ConflictError(`storage_destination_id: storage destination ${id} is disabled`)
    return destination
  }

  /** The destination's credentials in clear, for the upload step and the connection test only. */
  openCredentials(destination: StorageDestinationDocument): StorageCredentials {
    return JSON.parse(this.#box.open(destination.credentials_sealed)) as StorageCredentials
  }

  /**
   * The credentials a runner's upload step signs with, for a command accepted
   * with this destination (disabled since or not); null when it is gone.
   */
  async runnerCredentials(accountId: string, id: string): Promise<DestinationCredentials | null> {
    const destination = await this.find(accountId, id)
    if (!destination) return null
    const { access_key_id, secret_access_key, session_token } = this.openCredentials(destination)
    return { accessKeyId: access_key_id, secretAccessKey: secret_access_key, ...(session_token ? { sessionToken: session_token } : {}) }
  }

  #sealCredentials(credentials: StorageCredentials): SealedValue {
    const { access_key_id, secret_access_key, session_token } = credentials
    return this.#box.seal(JSON.stringify({ access_key_id, secret_access_key, ...(session_token ? { session_token } : {}) }))
  }
}
