import type { Db } from 'mongodb'
import type { Clock } from '../clock.js'
import { toPollResponse } from '../commands/command-document.js'
import type { CommandPollResponse } from '../commands/schemas.js'
import type { CompletionEvent } from '../../contracts/completion-events.js'
import { commandsCollection } from '../commands/command-repository.js'
import type { Logger } from '../logger.js'
import type { WebhookConfigRepository } from '../webhooks/webhook-config-repository.js'
import { attemptKey, loggedSeq, type AttemptClaim, type AttemptRecord, type DeliveryStore, type WebhookTarget } from './delivery-store.js'
import type { WebhookRecorder } from '../metrics/service-metrics.js'
import type { WebhookSender } from './send-webhook.js'
import { SingleFlight } from './single-flight.js'
import { buildWebhookRequest } from './webhook-request.js'

/** One delivery: one completion (or one redeliver request) of one command. */
export interface DeliveryRef {
  deliveryId: string
  commandId: string
  accountId: string
}

export type AttemptOutcome =
  /** The attempt has ended, sent by this call or found in the log. */
  | { kind: 'recorded'; record: AttemptRecord }
  /** Nothing to deliver to: no per-command URL and no active account webhook, or no finished command. */
  | { kind: 'dropped'; reason: string }
  /** Another deliverer holds the claim and is sending now. */
  | { kind: 'in-flight' }

export interface AttemptRunnerDeps {
  db: Db
  store: DeliveryStore
  configs: WebhookConfigRepository
  sender: WebhookSender
  clock: Clock
  logger: Logger
  /** After this long a claim without a logged end counts as a deliverer that died mid-attempt. */
  leaseMs: number
  metrics?: WebhookRecorder | undefined
}

/** The completion event's copy of the command; the first attempt sends it instead of reading MongoDB. */
export type CompletionSnapshot = NonNullable<CompletionEvent['snapshot']>

interface ResolvedTarget {
  poll: CommandPollResponse
  target: WebhookTarget
  url: string
  secret: string | null
  revision: string | null
}

/** Makes attempt n of a delivery at most once across every deliverer replica. */
export class AttemptRunner {
  readonly #deps: AttemptRunnerDeps
  readonly #targets: SingleFlight<Awaited<ReturnType<WebhookConfigRepository['findDeliveryTarget']>>>

  constructor(deps: AttemptRunnerDeps) {
    this.#deps = deps
    this.#targets = new SingleFlight((accountId) => deps.configs.findDeliveryTarget(accountId))
  }

  async run(ref: DeliveryRef, attempt: number, snapshot?: CompletionSnapshot): Promise<AttemptOutcome> {
    const { store, clock } = this.#deps
    const key = attemptKey(ref.deliveryId, attempt)
    const resolved = await this.#resolve(ref, snapshot)
    if (typeof resolved === 'string') return { kind: 'dropped', reason: resolved }
    const claim: AttemptClaim = {
      _id: key,
      delivery_id: ref.deliveryId,
      command_id: ref.commandId,
      account_id: ref.accountId,
      target: resolved.target,
      url: resolved.url,
      attempt,
      config_revision: resolved.revision,
      claimed_at: clock(),
    }
    // A repeated event or a stale due entry finds the claim taken and the end in the log.
    if (!(await store.claim(claim))) return this.#claimedElsewhere(key)
    return { kind: 'recorded', record: await this.#send(claim, resolved) }
  }

  async #resolve(ref: DeliveryRef, snapshot: CompletionSnapshot | undefined): Promise<ResolvedTarget | string> {
    const command = snapshot
      ? { poll: snapshot.poll as CommandPollResponse, webhookUrl: snapshot.webhook_url }
      : await this.#loadCommand(ref)
    if (typeof command === 'string') return command
    const { poll, webhookUrl } = command
    const config = await this.#targets.get(ref.accountId)
    // Per-command URLs are signed with the account's secret too (spec: same payload and signature).
    if (webhookUrl) {
      return { poll, target: 'command', url: webhookUrl, secret: config?.secret ?? null, revision: null }
    }
    if (!config || !config.is_active) return 'the account has no active webhook'
    return { poll, target: 'account', url: config.url, secret: config.secret, revision: config.revision }
  }

  /** Retries and redeliveries send the command as it is now (deleted files show as deleted). */
  async #loadCommand(ref: DeliveryRef): Promise<{ poll: CommandPollResponse; webhookUrl: string | null } | string> {
    const command = await commandsCollection(this.#deps.db).findOne({ _id: ref.commandId })
    if (!command || command.account_id !== ref.accountId) return 'the command does not exist'
    if (command.status !== 'SUCCESS' && command.status !== 'FAILED') return `the command is ${command.status}, not finished`
    return { poll: toPollResponse(command), webhookUrl: command.webhook_url }
  }

  async #send(claim: AttemptClaim, resolved: ResolvedTarget): Promise<AttemptRecord> {
    const { store, sender, clock } = this.#deps
    const log = this.#deps.logger.child({ command_id: claim.command_id, account_id: claim.account_id, delivery_id: claim.delivery_id, attempt: claim.attempt })
    const startedAt = clock()
    const request = buildWebhookRequest({
      poll: resolved.poll,
      timestampMs: startedAt.getTime(),
      deliveryId: claim.delivery_id,
      attempt: claim.attempt,
      secret: resolved.secret,
    })
    const result = await sender.send(claim.url, request)
    const { claimed_at: _claimedAt, ...fields } = claim
    const record = await store.record({ ...fields, ...result, started_at: startedAt, finished_at: clock(), logged_seq: loggedSeq() })
    this.#deps.metrics?.attempt(record.outcome)
    if (record.outcome === 'success') log.info({ target: claim.target, status_code: record.status_code, duration_ms: record.duration_ms }, 'webhook delivered')
    else log.warn({ target: claim.target, status_code: record.status_code, error: record.error, duration_ms: record.duration_ms }, 'webhook attempt failed')
    await this.#updateFailureRun(record)
    return record
  }

  /** Someone else claimed the attempt: it is either being sent now or its sender died. */
  async #claimedElsewhere(key: string): Promise<AttemptOutcome> {
    const { store, clock, leaseMs } = this.#deps
    const logged = await store.findRecord(key)
    if (logged) return { kind: 'recorded', record: logged }
    const claim = await store.findClaim(key)
    if (!claim || clock().getTime() - claim.claimed_at.getTime() < leaseMs) return { kind: 'in-flight' }
    // The claimer died between claim and log: whether the receiver got it is unknown, and
    // sending it again could deliver it twice, so the attempt counts as failed.
    const { claimed_at: _claimedAt, ...fields } = claim
    const record = await store.record({
      ...fields,
      outcome: 'failure',
      status_code: null,
      error: 'abandoned: the deliverer stopped during this attempt',
      duration_ms: 0,
      started_at: claim.claimed_at,
      finished_at: new Date(claim.claimed_at.getTime() + leaseMs),
      logged_seq: loggedSeq(),
    })
    this.#deps.logger.warn({ command_id: claim.command_id, account_id: claim.account_id, delivery_id: claim.delivery_id, attempt: claim.attempt }, 'webhook attempt abandoned by a stopped deliverer')
    await this.#updateFailureRun(record)
    return { kind: 'recorded', record }
  }

  /** Account-level attempts only (spec: per-command URLs never touch the counter). */
  async #updateFailureRun(record: AttemptRecord): Promise<void> {
    if (record.target !== 'account') return
    const { configs } = this.#deps
    if (record.outcome === 'success') return configs.recordSuccess(record.account_id, record.config_revision)
    const { config, disabled } = await configs.recordFailure(record.account_id, record.config_revision)
    if (disabled) {
      this.#deps.logger.warn({ account_id: record.account_id, command_id: record.command_id, consecutive_failures: config?.consecutive_failures }, 'account webhook disabled after consecutive failures')
    }
  }
}
