import { randomUUID } from 'node:crypto'
import type { Collection, Db } from 'mongodb'
import { systemClock, type Clock } from '../clock.js'
import type { SealedValue, SecretBox } from '../crypto/secret-box.js'

/** After this many consecutive failed deliveries the account-level webhook disables itself (spec). */
export const WEBHOOK_FAILURES_BEFORE_DISABLE = 8

/** An account's webhook configuration; one per account, so `_id` is the account id. */
export interface WebhookConfigDocument {
  _id: string
  url: string
  /** The signing secret, sealed; null when deliveries go unsigned. */
  secret_sealed: SealedValue | null
  is_active: boolean
  disabled_at: Date | null
  consecutive_failures: number
  /**
   * A fresh value on every PUT. Failure runs are counted per revision (from the
   * webhook deliverer's attempt log), so a PUT resets the count without
   * racing the deliverers' writes.
   */
  revision: string
  created_at: Date
  updated_at: Date
}

/** Account-level webhook configurations in MongoDB, for the API and the webhook deliverer. */
export class WebhookConfigRepository {
  readonly #configs: Collection<WebhookConfigDocument>
  readonly #box: SecretBox
  readonly #now: Clock

  constructor(db: Db, box: SecretBox, now: Clock = systemClock) {
    this.#configs = db.collection('webhook_configs')
    this.#box = box
    this.#now = now
  }

  /**
   * Creates or replaces the account's configuration: active again, failure
   * counter reset, as the spec's PUT does. Without a secret, deliveries are no
   * longer signed.
   */
  async put(accountId: string, url: string, secret: string | null): Promise<WebhookConfigDocument> {
    const now = this.#now()
    const doc = await this.#configs.findOneAndUpdate(
      { _id: accountId },
      {
        $set: {
          url,
          secret_sealed: secret === null ? null : this.#box.seal(secret),
          is_active: true,
          disabled_at: null,
          consecutive_failures: 0,
          revision: randomUUID(),
          updated_at: now,
        },
        $setOnInsert: { created_at: now },
      },
      { upsert: true, returnDocument: 'after' },
    )
    return doc!
  }

  async find(accountId: string): Promise<WebhookConfigDocument | null> {
    return this.#configs.findOne({ _id: accountId })
  }

  /** Deactivates the account's webhook, keeping its configuration; null when there is none. */
  async deactivate(accountId: string): Promise<WebhookConfigDocument | null> {
    const now = this.#now()
    // Only an active one changes, so a second DELETE keeps the first disabled_at.
    const changed = await this.#configs.findOneAndUpdate(
      { _id: accountId, is_active: true },
      { $set: { is_active: false, disabled_at: now, updated_at: now } },
      { returnDocument: 'after' },
    )
    return changed ?? this.find(accountId)
  }

  /**
   * Everything a delivery needs, active or not (per-command URLs are signed
   * with the account's secret too), the secret in clear for the HMAC (null
   * when none was configured).
   */
  async findDeliveryTarget(
    accountId: string,
  ): Promise<{ url: string; secret: string | null; is_active: boolean; revision: string; consecutive_failures: number } | null> {
    const doc = await this.find(accountId)
    if (!doc) return null
    return {
      url: doc.url,
      secret: doc.secret_sealed ? this.#box.open(doc.secret_sealed) : null,
      is_active: doc.is_active,
      revision: doc.revision,
      consecutive_failures: doc.consecutive_failures,
    }
  }

  /**
   * A delivery to the account-level URL succeeded: the failure run is over.
   * With `revision`, only while that configuration is current, so an attempt
   * made under the previous one never touches a freshly PUT configuration.
   */
  async recordSuccess(accountId: string, revision?: string): Promise<void> {
    await this.#configs.updateOne({ _id: accountId, ...revisionFilter(revision), consecutive_failures: { $ne: 0 } }, { $set: { consecutive_failures: 0 } })
  }

  /**
   * A delivery to the account-level URL failed: one more in the failure run,
   * counted with `$inc` (atomic on any number of deliverer replicas); the
   * eighth disables the webhook. Per-command webhook URLs must not call this
   * (spec). Returns the configuration after the change and whether this call
   * disabled it.
   */
  async recordFailure(accountId: string, revision?: string): Promise<{ config: WebhookConfigDocument | null; disabled: boolean }> {
    const now = this.#now()
    const active = { _id: accountId, is_active: true, ...revisionFilter(revision) }
    // The count stops at the limit, so failures racing the disable below do not run it past.
    const after = await this.#configs.findOneAndUpdate(
      { ...active, consecutive_failures: { $lt: WEBHOOK_FAILURES_BEFORE_DISABLE } },
      { $inc: { consecutive_failures: 1 }, $set: { updated_at: now } },
      { returnDocument: 'after' },
    )
    if (after && after.consecutive_failures < WEBHOOK_FAILURES_BEFORE_DISABLE) return { config: after, disabled: false }
    // At the limit, reached now or by a deliverer that stopped before turning it off: off, once.
    const disabled = await this.#configs.findOneAndUpdate(
      { ...active, consecutive_failures: { $gte: WEBHOOK_FAILURES_BEFORE_DISABLE } },
      { $set: { is_active: false, disabled_at: now } },
      { returnDocument: 'after' },
    )
    return disabled ? { config: disabled, disabled: true } : { config: after, disabled: false }
  }
}

/** Matches the configuration `revision` names; undefined: any. */
function revisionFilter(revision: string | undefined): { revision?: string } {
  return revision === undefined ? {} : { revision }
}
