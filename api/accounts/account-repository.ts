import type { Collection, Db } from 'mongodb'
import type { SecretBox, SealedValue } from '../crypto/secret-box.js'
import { newId } from '../ids.js'
import type { AccountChanges } from './account-changes.js'
import { generateApiKey, hashApiKey, hashesEqual } from './api-keys.js'
import type { Plan } from './plans.js'

export interface AccountDocument {
  _id: string
  name: string | null
  plan: Plan
  created_at: Date
}

export interface ApiKeyDocument {
  _id: string
  account_id: string
  /** SHA-256 of the key, hex; unique, the lookup path of every request. */
  hash: string
  /** The key itself, sealed, so an administrator can show it again. */
  sealed: SealedValue
  /** The key's last four characters, for the console's masked list. */
  last_four: string
  created_at: Date
  revoked_at: Date | null
}

/** A key as the console lists it. */
export interface KeySummary {
  key_id: string
  last_four: string
  created_at: Date
  revoked_at: Date | null
}

/** The account and key an authenticated request acts for. */
export interface AuthenticatedAccount {
  id: string
  plan: Plan
  keyId: string
}

/**
 * An account's plan read from its record, for parts that need the plan and
 * nothing sealed (the storage quota of the worker's projector): the read
 * AccountRepository.findAccount does, without the secret box.
 */
export function planReader(db: Db): (accountId: string) => Promise<Plan | null> {
  const accounts = db.collection<AccountDocument>('accounts')
  return async (accountId) => (await accounts.findOne({ _id: accountId }, { projection: { plan: 1 } }))?.plan ?? null
}

/** Accounts and their API keys in MongoDB. */
export class AccountRepository {
  readonly #accounts: Collection<AccountDocument>
  readonly #keys: Collection<ApiKeyDocument>
  readonly #box: SecretBox
  readonly #changes: AccountChanges | undefined

  /** `changes`: where revocations and plan changes are announced, so replicas drop what they cached (key-cache.ts). */
  constructor(db: Db, box: SecretBox, changes?: AccountChanges) {
    this.#accounts = db.collection('accounts')
    this.#keys = db.collection('api_keys')
    this.#box = box
    this.#changes = changes
  }

  async ensureIndexes(): Promise<void> {
    await this.#keys.createIndex({ hash: 1 }, { unique: true })
    await this.#keys.createIndex({ account_id: 1 })
  }

  async createAccount(plan: Plan, name: string | null = null): Promise<{ account_id: string; api_key: string; key_id: string }> {
    const account: AccountDocument = { _id: newId('acc'), name, plan, created_at: new Date() }
    await this.#accounts.insertOne(account)
    const key = await this.createKey(account._id)
    return { account_id: account._id, api_key: key.api_key, key_id: key.key_id }
  }

  /** A new key for an existing account; null when there is no such account. */
  async createKey(accountId: string): Promise<{ api_key: string; key_id: string; created_at: Date }> {
    const apiKey = generateApiKey()
    const doc: ApiKeyDocument = {
      _id: newId('key'),
      account_id: accountId,
      hash: hashApiKey(apiKey),
      sealed: this.#box.seal(apiKey),
      last_four: apiKey.slice(-4),
      created_at: new Date(),
      revoked_at: null,
    }
    await this.#keys.insertOne(doc)
    return { api_key: apiKey, key_id: doc._id, created_at: doc.created_at }
  }

  async findAccount(accountId: string): Promise<AccountDocument | null> {
    return this.#accounts.findOne({ _id: accountId })
  }

  /** The account behind a presented key, or null for an unknown or revoked key. */
  async authenticate(apiKey: string): Promise<AuthenticatedAccount | null> {
    const hash = hashApiKey(apiKey)
    const key = await this.#keys.findOne({ hash, revoked_at: null })
    if (!key || !hashesEqual(key.hash, hash)) return null
    const account = await this.#accounts.findOne({ _id: key.account_id })
    return account ? { id: account._id, plan: account.plan, keyId: key._id } : null
  }

  /** The id of a key given in clear, revoked or not; null when it was never issued. */
  async keyIdOf(apiKey: string): Promise<string | null> {
    const key = await this.#keys.findOne({ hash: hashApiKey(apiKey) }, { projection: { _id: 1 } })
    return key?._id ?? null
  }

  /** Revokes a key; true when it was active. Announced before it returns, so every replica refuses the key from then on. */
  async revokeKey(keyId: string): Promise<boolean> {
    const result = await this.#keys.updateOne({ _id: keyId, revoked_at: null }, { $set: { revoked_at: new Date() } })
    await this.#changes?.announce({ kind: 'key', key_id: keyId })
    return result.modifiedCount === 1
  }

  /** The key in clear, for an administrator to copy again. */
  async revealKey(keyId: string): Promise<string | null> {
    const key = await this.#keys.findOne({ _id: keyId })
    return key ? this.#box.open(key.sealed) : null
  }

  /** The account's keys, revoked ones too, newest first; each with its last four characters, never the key. */
  async listKeys(accountId: string): Promise<KeySummary[]> {
    const keys = await this.#keys.find({ account_id: accountId }).sort({ created_at: -1, _id: -1 }).toArray()
    return keys.map((key) => ({
      key_id: key._id,
      last_four: key.last_four,
      created_at: key.created_at,
      revoked_at: key.revoked_at,
    }))
  }

  /** One of the account's keys in clear (the console's copy button); null when it is not the account's, 'revoked' when revoked. */
  async revealAccountKey(accountId: string, keyId: string): Promise<string | 'revoked' | null> {
    const key = await this.#keys.findOne({ _id: keyId, account_id: accountId })
    if (!key) return null
    return key.revoked_at ? 'revoked' : this.#box.open(key.sealed)
  }

  /** Revokes one of the account's keys; its revoked_at, null when the account has no such key. Revoking twice keeps the first time. */
  async revokeAccountKey(accountId: string, keyId: string, now: Date): Promise<Date | null> {
    await this.#keys.updateOne({ _id: keyId, account_id: accountId, revoked_at: null }, { $set: { revoked_at: now } })
    await this.#changes?.announce({ kind: 'key', key_id: keyId })
    const key = await this.#keys.findOne({ _id: keyId, account_id: accountId }, { projection: { revoked_at: 1 } })
    return key?.revoked_at ?? null
  }

  /** Whether a key exists and is not revoked: a console session opened with a key lives only as long as it. */
  async isKeyActive(keyId: string): Promise<boolean> {
    return (await this.#keys.countDocuments({ _id: keyId, revoked_at: null }, { limit: 1 })) === 1
  }

  async setPlan(accountId: string, plan: Plan): Promise<boolean> {
    const result = await this.#accounts.updateOne({ _id: accountId }, { $set: { plan } })
    await this.#changes?.announce({ kind: 'account', account_id: accountId })
    return result.matchedCount === 1
  }
}
