/**
 * The webhook deliverer: turns completion events into signed POSTs and
 * walks the spec's retry schedule. Attempt 1 is made straight from the
 * JetStream event (acknowledged only once its outcome is logged and any retry
 * is scheduled); retries wait in `webhook_due` with their due time, so a
 * restarted or different replica continues the schedule. Every send is
 * preceded by a unique-insert claim (delivery-attempt.ts): replicas never send
 * the same attempt twice.
 */
import type { JsMsg, NatsConnection } from 'nats'
import type { Db } from 'mongodb'
import { systemClock, systemSleep, type Clock, type Sleep } from '../clock.js'
import type { Logger } from '../logger.js'
import type { WebhookRecorder } from '../metrics/service-metrics.js'
import type { WebhookConfigRepository } from '../webhooks/webhook-config-repository.js'
import type { Resolver } from '../../contracts/url-guard-fetch.js'
import { completionCodec, completionConsumer, DELIVERER_CONSUMER } from './completion-consumer.js'
import { AttemptRunner, type CompletionSnapshot, type DeliveryRef } from './delivery-attempt.js'
import { DeliveryStore, type AttemptRecord, type DueDelivery } from './delivery-store.js'
import { nextAttemptAt } from './retry-schedule.js'
import { WebhookSender } from './send-webhook.js'

export const DEFAULT_WEBHOOK_TIMEOUT_MS = 15_000

export interface WebhookDelivererOptions {
  db: Db
  nats: NatsConnection
  configs: WebhookConfigRepository
  logger: Logger
  allowPrivateNetworks: boolean
  /** A 2xx must arrive within this (WEBHOOK_TIMEOUT_MS, default 15 s). */
  timeoutMs?: number
  clock?: Clock
  sleep?: Sleep
  /** How often `webhook_due` is looked at when nothing nudged (redeliveries queued by the API, other replicas). */
  pollIntervalMs?: number
  /** A claim older than this without a logged end belonged to a deliverer that died mid-attempt. */
  leaseMs?: number
  /** Attempts in flight at once, per source (events, due retries). */
  concurrency?: number
  consumerName?: string
  resolve?: Resolver
  metrics?: WebhookRecorder
}

/** The delivery id of a command's completion: the same on every retry and every replica. */
export function completionDeliveryId(commandId: string): string {
  return `whd_${commandId}`
}

export class WebhookDeliverer {
  readonly #options: WebhookDelivererOptions
  readonly #store: DeliveryStore
  readonly #runner: AttemptRunner
  readonly #sender: WebhookSender
  readonly #clock: Clock
  readonly #sleep: Sleep
  readonly #log: Logger
  readonly #concurrency: number
  readonly #inFlight = new Set<string>()
  #wake = new AbortController()
  #running = false
  #loops: Promise<void>[] = []
  #stopConsuming: (() => Promise<void>) | null = null

  constructor(options: WebhookDelivererOptions) {
    this.#options = options
    this.#clock = options.clock ?? systemClock
    this.#sleep = options.sleep ?? systemSleep
    this.#log = options.logger
    // Measured (bench/webhooks.ts): FerretDB/SQLite slows down under more concurrent writers
    // than this (lock retries), so more attempts in flight deliver fewer per second.
    this.#concurrency = options.concurrency ?? 16
    this.#store = new DeliveryStore(options.db)
    const timeoutMs = options.timeoutMs ?? DEFAULT_WEBHOOK_TIMEOUT_MS
    this.#sender = new WebhookSender({ allowPrivateNetworks: options.allowPrivateNetworks, timeoutMs, resolve: options.resolve })
    this.#runner = new AttemptRunner({
      db: options.db,
      store: this.#store,
      configs: options.configs,
      sender: this.#sender,
      clock: this.#clock,
      logger: options.logger,
      leaseMs: this.#leaseMs,
      metrics: options.metrics,
    })
  }

  get #leaseMs(): number {
    return this.#options.leaseMs ?? Math.max(60_000, 2 * (this.#options.timeoutMs ?? DEFAULT_WEBHOOK_TIMEOUT_MS))
  }

  async start(): Promise<void> {
    if (this.#running) return
    await this.#store.ensureIndexes()
    const consumer = await completionConsumer(this.#options.nats, this.#options.consumerName ?? DELIVERER_CONSUMER, this.#leaseMs)
    const messages = await consumer.consume({ max_messages: this.#concurrency })
    this.#running = true
    this.#stopConsuming = async () => {
      await messages.close().catch(() => undefined)
    }
    this.#loops = [this.#consumeLoop(messages), this.#dueLoop()]
    this.#log.info('webhook deliverer started')
  }

  /** Stops taking work and waits for attempts in flight to end. */
  async stop(): Promise<void> {
    if (!this.#running) return
    this.#running = false
    await this.#stopConsuming?.()
    this.#wake.abort()
    // Cuts attempts in flight short: each is logged as a failed attempt and retried on
    // schedule, which beats outliving a shutdown grace period with a 15 s timeout.
    this.#sender.close()
    await Promise.all(this.#loops)
    this.#log.info('webhook deliverer stopped')
  }

  /** Look at `webhook_due` now (e.g. after a redeliver was queued in this process). */
  nudge(): void {
    this.#wake.abort()
  }

  async #consumeLoop(messages: AsyncIterable<JsMsg>): Promise<void> {
    const pending = new Set<Promise<void>>()
    try {
      for await (const msg of messages) {
        const handled = this.#onCompletion(msg).finally(() => pending.delete(handled))
        pending.add(handled)
        if (pending.size >= this.#concurrency) await Promise.race(pending)
        if (!this.#running) break
      }
    } catch (error) {
      this.#log.error({ err: error }, 'completion consumer ended')
    }
    await Promise.all(pending)
  }

  async #onCompletion(msg: JsMsg): Promise<void> {
    let ref: DeliveryRef
    let snapshot: CompletionSnapshot | undefined
    try {
      const event = completionCodec.decode(msg.data)
      if (typeof event.command_id !== 'string' || typeof event.account_id !== 'string') throw new Error('command_id and account_id must be strings')
      ref = { deliveryId: completionDeliveryId(event.command_id), commandId: event.command_id, accountId: event.account_id }
      snapshot = event.snapshot
    } catch (error) {
      // Not an event this version understands: retrying cannot fix it.
      this.#log.error({ err: error, subject: msg.subject }, 'unreadable completion event dropped')
      msg.term()
      return
    }
    try {
      const outcome = await this.#attempt(ref, 1, snapshot)
      if (outcome === 'in-flight') msg.nak(this.#leaseMs)
      else msg.ack()
    } catch (error) {
      this.#log.error({ err: error, command_id: ref.commandId, account_id: ref.accountId }, 'completion event not handled; it will come again')
      msg.nak(1_000)
    }
  }

  /** Makes one attempt and moves the delivery on from it. */
  async #attempt(ref: DeliveryRef, attempt: number, snapshot?: CompletionSnapshot): Promise<'done' | 'in-flight'> {
    const outcome = await this.#runner.run(ref, attempt, snapshot)
    if (outcome.kind === 'in-flight') return 'in-flight'
    // A completion's first attempt comes from its event, never from `webhook_due` (only a
    // failure puts it there), so ending it has no due entry to remove: one write saved per webhook.
    const queued = !(attempt === 1 && snapshot)
    if (outcome.kind === 'dropped') {
      this.#log.info({ command_id: ref.commandId, account_id: ref.accountId, delivery_id: ref.deliveryId, reason: outcome.reason }, 'webhook not sent')
      if (queued) await this.#store.finish(ref.deliveryId, attempt)
      return 'done'
    }
    await this.#settle(ref, outcome.record, queued)
    return 'done'
  }

  /** After an attempt: schedule the next one (spec's delays, from the failure) or end the delivery. */
  async #settle(ref: DeliveryRef, record: AttemptRecord, queued: boolean): Promise<void> {
    const next = record.outcome === 'failure' ? nextAttemptAt(record.attempt, record.finished_at) : null
    if (next === null) {
      if (queued) await this.#store.finish(ref.deliveryId, record.attempt)
      if (record.outcome === 'failure') this.#log.warn({ command_id: ref.commandId, account_id: ref.accountId, delivery_id: ref.deliveryId }, 'webhook retries exhausted')
      return
    }
    await this.#store.scheduleAttempt({ _id: ref.deliveryId, command_id: ref.commandId, account_id: ref.accountId, attempt: record.attempt + 1, due_at: next }, this.#clock())
    this.nudge()
  }

  async #dueLoop(): Promise<void> {
    while (this.#running) {
      let acted = false
      try {
        acted = await this.runDue()
      } catch (error) {
        this.#log.error({ err: error }, 'webhook retry pass failed; trying again')
      }
      if (!this.#running) break
      if (acted) continue
      const signal = this.#wake.signal
      if (signal.aborted) {
        this.#wake = new AbortController()
        continue
      }
      const now = this.#clock()
      const next = await this.#store.nextDueAfter(now).catch(() => null)
      const poll = this.#options.pollIntervalMs ?? 1_000
      const wait = next ? Math.min(poll, Math.max(0, next.getTime() - now.getTime())) : poll
      await this.#sleep(wait, signal)
      if (signal.aborted) this.#wake = new AbortController()
    }
  }

  /** One pass over the due retries; true when any attempt was made or settled. */
  async runDue(): Promise<boolean> {
    const due = (await this.#store.dueBy(this.#clock(), this.#concurrency * 2)).filter((d) => !this.#inFlight.has(d._id))
    let acted = false
    for (let i = 0; i < due.length; i += this.#concurrency) {
      const results = await Promise.all(due.slice(i, i + this.#concurrency).map((d) => this.#runDueOne(d)))
      acted ||= results.includes(true)
    }
    return acted
  }

  async #runDueOne(due: DueDelivery): Promise<boolean> {
    this.#inFlight.add(due._id)
    try {
      return (await this.#attempt({ deliveryId: due._id, commandId: due.command_id, accountId: due.account_id }, due.attempt)) === 'done'
    } catch (error) {
      this.#log.error({ err: error, command_id: due.command_id, account_id: due.account_id, delivery_id: due._id }, 'webhook retry failed to run; it stays due')
      return false
    } finally {
      this.#inFlight.delete(due._id)
    }
  }
}
