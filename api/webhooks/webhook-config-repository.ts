import { randomUUID } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
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
   * racing the deliverers' writes. Absent on configurations written before it.
   */
  revision?: string
  created_at: Date
  updated_at: Date
}

/** What the webhook deliverer needs to send one account-level delivery. */
export interface ActiveWebhook {
  url: string
  /** In clear, for the HMAC; null when none was configured. */
  secret: string | null
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

  /** The account's webhook if it should receive deliveries, with its secret opened. */
  async findActive(accountId: string): Promise<ActiveWebhook | null> {
    const doc = await this.#configs.findOne({ _id: accountId, is_active: true })
    if (!doc) return null
    return { url: doc.url, secret: doc.secret_sealed ? this.#box.open(doc.secret_sealed) : null }
  }

  /** Everything a delivery needs, active or not: per-command URLs are signed with the account's secret too. */
  async findDeliveryTarget(accountId: string): Promise<(ActiveWebhook & { is_active: boolean; revision: string | null; consecutive_failures: number }) | null> {
    const doc = await this.find(accountId)
    if (!doc) return null
    return {
      url: doc.url,
      secret: doc.secret_sealed ? this.#box.open(doc.secret_sealed) : null,
      is_active: doc.is_active,
      revision: doc.revision ?? null,
      consecutive_failures: doc.consecutive_failures,
    }
  }

  /**
   * The webhook deliverer's write: the failure run it derived from its attempt
   * log for `revision` (see failure-run.ts), disabling the webhook at 8. A
   * `$set` of a derived value, so concurrent deliverers converge where `$inc`s
   * would lose counts on FerretDB; the revision filter keeps a count of the
   * previous configuration off a freshly PUT one. Returns whether it disabled.
   */
  async recordFailureRun(accountId: string, revision: string | null, run: number): Promise<boolean> {
    const now = this.#now()
    const disable = run >= WEBHOOK_FAILURES_BEFORE_DISABLE
    const result = await this.#configs.updateOne(
      { _id: accountId, is_active: true, revision: revision ?? { $exists: false } },
      { $set: disable ? { consecutive_failures: run, is_active: false, disabled_at: now } : { consecutive_failures: run } },
    )
    return disable && result.modifiedCount === 1
  }

  /** A delivery to the account-level URL succeeded: the failure run is over. */
  async recordSuccess(accountId: string): Promise<void> {
    await this.#configs.updateOne({ _id: accountId, consecutive_failures: { $ne: 0 } }, { $set: { consecutive_failures: 0 } })
  }

  /**
   * A delivery to the account-level URL failed. The eighth consecutive failure
   * disables the webhook. Per-command webhook URLs must not call this (spec).
   * Returns the configuration after the change. Single writer only: on
   * FerretDB 1.x concurrent `$inc`s lose counts, so the webhook deliverer
   * (several replicas) uses recordFailureRun with a count from its log.
   */
  async recordFailure(accountId: string): Promise<WebhookConfigDocument | null> {
    const now = this.#now()
    const after = await this.#configs.findOneAndUpdate(
      { _id: accountId, is_active: true },
      { $inc: { consecutive_failures: 1 }, $set: { updated_at: now } },
      { returnDocument: 'after' },
    )
    if (after && after.consecutive_failures >= WEBHOOK_FAILURES_BEFORE_DISABLE) {
      return this.#configs.findOneAndUpdate(
        { _id: accountId, is_active: true },
        { $set: { is_active: false, disabled_at: now } },
        { returnDocument: 'after' },
      )
    }
    return after
  }
}

declare module 'fastify' {
  interface FastifyInstance {
    webhookConfigs: WebhookConfigRepository
  }
}

/** Decorates the app with `webhookConfigs`. */
export const webhookConfigRepository = fp(
  async (app: FastifyInstance, options: { db: Db; secretBox: SecretBox; now?: Clock }) => {
    app.decorate('webhookConfigs', new WebhookConfigRepository(options.db, options.secretBox, options.now))
  },
  { name: 'webhook-config-repository' },
)
