/**
 * The webhook deliverer: turns completion events into signed POSTs and walks
 * the spec's retry schedule. The deliverer that gets a completion event
 * creates the delivery already held and makes attempt 1 at once (the event is
 * acknowledged once the attempt's end is logged and the delivery moved on).
 * Every later attempt, and every redelivery the API queues, waits in
 * `webhook_deliveries` until it is due; the deliverer that claims it makes it
 * (delivery-repository.ts). Only a delivery's holder sends, so replicas never send an
 * attempt twice, and any replica continues a schedule another one left.
 */
import { JSONCodec, type JsMsg, type NatsConnection } from 'nats'
import { COMPLETION_STREAM, type CompletionEvent } from '../../contracts/completion-events.js'
import { COMPLETION_STREAM_DEFINITION, ensureDurableConsumer, ensureStream } from '../../contracts/nats-streams.js'
import { systemClock, systemSleep, type Clock, type Sleep } from '../clock.js'
import { CommandRepository } from '../commands/command-repository.js'
import type { Logger } from '../logger.js'
import type { WebhookRecorder } from '../metrics/service-metrics.js'
import type { WebhookConfigRepository } from './webhook-config-repository.js'
import type { Resolver } from '../../contracts/url-guard-fetch.js'
import type { AttemptLog, AttemptRecord } from './attempt-log.js'
import { deliveryRef, startedBefore, type DeliveryRef, type DeliveryRepository, type HeldDelivery } from './delivery-repository.js'
import { AttemptRunner, type CompletionSnapshot, type ResolvedTarget } from './attempt-runner.js'
import { nextAttemptAt } from './retry-schedule.js'
import { WebhookSender, type Sender } from './webhook-sender.js'

export const DEFAULT_WEBHOOK_TIMEOUT_MS = 15_000

/** The durable consumer every deliverer replica shares: JetStream hands each event to one of them. */
export const DELIVERER_CONSUMER = 'ffkube-webhook-deliverer'

const completionCodec = JSONCodec<CompletionEvent>()

/** How long an attempt that could not be prepared (MongoDB unreachable) waits before it is tried again. */
const RETRY_AFTER_ERROR_MS = 1_000

export interface WebhookDelivererOptions {
  /** Where deliveries wait for their next attempt (the process's repository; a replica of its own in tests). */
  deliveries: DeliveryRepository
  /** Where each attempt's end is logged. */
  attempts: AttemptLog
  /** The commands whose completions it delivers (read for their webhook_url and result). */
  commands: CommandRepository
  nats: NatsConnection
  configs: WebhookConfigRepository
  logger: Logger
  allowPrivateNetworks: boolean
  /** A 2xx must arrive within this (WEBHOOK_TIMEOUT_MS, default 15 s). */
  timeoutMs?: number
  clock?: Clock
  sleep?: Sleep
  /** How often due deliveries are looked for when nothing nudged (redeliveries another process queued, deliveries another replica lost). */
  pollIntervalMs?: number
  /** How long a deliverer holds a delivery for one attempt; after that another replica may take it over. */
  leaseMs?: number
  /** Attempts in flight at once, per source (events, due deliveries). */
  concurrency?: number
  resolve?: Resolver
  metrics?: WebhookRecorder
  /** Sends the webhooks; a WebhookSender under the private-network rule by default. */
  sender?: Sender
}

/** The delivery id of a command's completion: the same on every retry and every replica. */
export function completionDeliveryId(commandId: string): string {
  return `whd_${commandId}`
}

export class WebhookDeliverer {
  readonly #options: WebhookDelivererOptions
  readonly #deliveries: DeliveryRepository
  readonly #attempts: AttemptLog
  readonly #runner: AttemptRunner
  readonly #sender: Sender
  readonly #clock: Clock
  readonly #sleep: Sleep
  readonly #logger: Logger
  readonly #concurrency: number
  readonly #leaseMs: number
  #wake = new AbortController()
  #running = false
  #loops: Promise<void>[] = []
  #stopConsuming: (() => Promise<void>) | null = null

  constructor(options: WebhookDelivererOptions) {
    this.#options = options
    this.#clock = options.clock ?? systemClock
    this.#sleep = options.sleep ?? systemSleep
    this.#logger = options.logger
    // Measured (bench/webhooks.ts): past this many attempts in flight, the store's writes queue
    // up and fewer webhooks go out per second.
    this.#concurrency = options.concurrency ?? 16
    const timeoutMs = options.timeoutMs ?? DEFAULT_WEBHOOK_TIMEOUT_MS
    // A live holder ends an attempt within the timeout and a few writes.
    this.#leaseMs = options.leaseMs ?? Math.max(60_000, 2 * timeoutMs)
    this.#deliveries = options.deliveries
    this.#attempts = options.attempts
    this.#sender = options.sender ?? new WebhookSender({ allowPrivateNetworks: options.allowPrivateNetworks, timeoutMs, resolve: options.resolve })
    this.#runner = new AttemptRunner({
      commands: options.commands,
      log: this.#attempts,
      configs: options.configs,
      sender: this.#sender,
      clock: this.#clock,
      logger: options.logger,
      metrics: options.metrics,
    })
  }

  async start(): Promise<void> {
    if (this.#running) return
    await this.#deliveries.ensureIndexes()
    await this.#attempts.ensureIndexes()
    // The deliverer may start before the projector that publishes: it creates the stream too. An event not
    // acknowledged within the lease goes to another replica, which finds its delivery there.
    const { nats } = this.#options
    await ensureStream(nats, COMPLETION_STREAM_DEFINITION)
    await ensureDurableConsumer(nats, COMPLETION_STREAM, DELIVERER_CONSUMER, 10_000, this.#leaseMs)
    const consumer = await nats.jetstream().consumers.get(COMPLETION_STREAM, DELIVERER_CONSUMER)
    const messages = await consumer.consume({ max_messages: this.#concurrency })
    this.#running = true
    this.#stopConsuming = async () => {
      await messages.close().catch(() => undefined)
    }
    this.#loops = [this.#consumeLoop(messages), this.#dueLoop()]
    this.#logger.info('webhook deliverer started')
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
    this.#logger.info('webhook deliverer stopped')
  }

  /** Look for due deliveries now (e.g. after a redelivery was queued in this process). */
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
      this.#logger.error({ err: error }, 'completion consumer ended')
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
      this.#logger.error({ err: error, subject: msg.subject }, 'unreadable completion event dropped')
      msg.term()
      return
    }
    try {
      await this.#deliverCompletion(ref, snapshot)
      msg.ack()
    } catch (error) {
      this.#logger.error({ err: error, command_id: ref.commandId, account_id: ref.accountId }, 'completion event not handled; it will come again')
      msg.nak(1_000)
    }
  }

  /** Attempt 1 of a completion's delivery, straight from its event. */
  async #deliverCompletion(ref: DeliveryRef, snapshot: CompletionSnapshot | undefined): Promise<void> {
    const resolved = await this.#runner.resolve(ref, snapshot)
    if ('dropped' in resolved) return this.#notSent(ref, resolved.dropped)
    // A repeated event finds the delivery created: it goes on from its record, whoever holds it.
    const held = await this.#deliveries.startHeld(ref, this.#clock(), this.#leaseMs)
    if (held) await this.#attempt(held, resolved)
  }

  async #dueLoop(): Promise<void> {
    const inFlight = new Set<Promise<void>>()
    while (this.#running) {
      if (inFlight.size >= this.#concurrency) {
        await Promise.race(inFlight)
        continue
      }
      let held: HeldDelivery | null
      try {
        held = await this.#deliveries.claimNext(this.#clock(), this.#leaseMs)
      } catch (error) {
        this.#logger.error({ err: error }, 'looking for due webhook deliveries failed; trying again')
        await this.#waitForDue({ look: false })
        continue
      }
      if (!held) {
        await this.#waitForDue({ look: true })
        continue
      }
      const run = this.#runDue(held).finally(() => inFlight.delete(run))
      inFlight.add(run)
    }
    await Promise.all(inFlight)
  }

  /** Sleeps until the next delivery is due (`look`), a nudge, or the poll interval, whichever is first. */
  async #waitForDue({ look }: { look: boolean }): Promise<void> {
    const signal = this.#wake.signal
    if (!signal.aborted) {
      const poll = this.#options.pollIntervalMs ?? 1_000
      const now = this.#clock()
      const next = look ? await this.#deliveries.nextDueAt().catch(() => null) : null
      const wait = next ? Math.min(poll, Math.max(0, next.getTime() - now.getTime())) : poll
      if (wait > 0) await this.#sleep(wait, signal)
    }
    if (signal.aborted && this.#wake.signal === signal) this.#wake = new AbortController()
  }

  /** A due delivery this deliverer now holds: a retry, a redelivery, or one whose holder stopped. */
  async #runDue(held: HeldDelivery): Promise<void> {
    const ref = deliveryRef(held.doc)
    try {
      if (startedBefore(held.doc)) {
        const ended = await this.#runner.takeOver(ref, held.doc.attempt)
        if ('dropped' in ended) return await this.#drop(held, ended.dropped)
        return await this.#settle(held, ended)
      }
      let resolved: Awaited<ReturnType<AttemptRunner['resolve']>>
      try {
        resolved = await this.#runner.resolve(ref)
      } catch (error) {
        this.#logger.error({ err: error, command_id: ref.commandId, account_id: ref.accountId, delivery_id: ref.deliveryId }, 'webhook attempt could not be prepared; it is tried again')
        await this.#deliveries.retryLater(held, new Date(this.#clock().getTime() + RETRY_AFTER_ERROR_MS))
        return
      }
      if ('dropped' in resolved) return await this.#drop(held, resolved.dropped)
      await this.#attempt(held, resolved)
    } catch (error) {
      this.#logger.error({ err: error, command_id: ref.commandId, account_id: ref.accountId, delivery_id: ref.deliveryId }, 'webhook delivery stuck; another deliverer takes it over when the lease ends')
    }
  }

  /** Makes the held delivery's attempt and moves the delivery on from it. */
  async #attempt(held: HeldDelivery, resolved: ResolvedTarget): Promise<void> {
    const record = await this.#runner.send(deliveryRef(held.doc), held.doc.attempt, resolved)
    await this.#settle(held, record)
  }

  /** After an attempt: schedule the next one (spec's delays, from the failure) or end the delivery. */
  async #settle(held: HeldDelivery, record: AttemptRecord): Promise<void> {
    const ref = deliveryRef(held.doc)
    const next = record.outcome === 'failure' ? nextAttemptAt(record.attempt, record.finished_at) : null
    let kept: boolean
    if (next) {
      kept = await this.#deliveries.scheduleNext(held, next)
      this.nudge()
    } else {
      kept = await this.#deliveries.end(held, record.outcome === 'success' ? 'delivered' : 'exhausted', this.#clock())
      if (kept && record.outcome === 'failure') this.#logger.warn({ command_id: ref.commandId, account_id: ref.accountId, delivery_id: ref.deliveryId }, 'webhook retries exhausted')
    }
    if (!kept) this.#logger.warn({ command_id: ref.commandId, account_id: ref.accountId, delivery_id: ref.deliveryId, attempt: record.attempt }, 'webhook delivery was taken over after this deliverer\'s lease ended; the logged end stands')
  }

  async #drop(held: HeldDelivery, reason: string): Promise<void> {
    this.#notSent(deliveryRef(held.doc), reason)
    await this.#deliveries.end(held, 'dropped', this.#clock())
  }

  #notSent(ref: DeliveryRef, reason: string): void {
    this.#logger.info({ command_id: ref.commandId, account_id: ref.accountId, delivery_id: ref.deliveryId, reason }, 'webhook not sent')
  }
}
