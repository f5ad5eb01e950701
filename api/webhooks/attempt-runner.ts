import type { Clock } from '../clock.js'
import { toPollResponse } from '../commands/command-document.js'
import type { CommandRepository } from '../commands/command-repository.js'
import type { CommandPollResponse } from '../commands/schemas.js'
import type { CompletionEvent } from '../../contracts/completion-events.js'
import type { Logger } from '../logger.js'
import type { WebhookRecorder } from '../metrics/service-metrics.js'
import type { WebhookConfigRepository } from './webhook-config-repository.js'
import { attemptKey, loggedSeq, type AttemptLog, type AttemptRecord, type WebhookTarget } from './attempt-log.js'
import type { DeliveryRef } from './delivery-repository.js'
import type { Sender } from './webhook-sender.js'
import { buildWebhookRequest } from './webhook-request.js'

export interface AttemptRunnerDeps {
  commands: CommandRepository
  log: AttemptLog
  configs: WebhookConfigRepository
  sender: Sender
  clock: Clock
  logger: Logger
  metrics?: WebhookRecorder | undefined
}

/** The completion event's copy of the command; the first attempt sends it instead of reading MongoDB. */
export type CompletionSnapshot = NonNullable<CompletionEvent['snapshot']>

/** Where and what an attempt sends. */
export interface ResolvedTarget {
  poll: CommandPollResponse
  target: WebhookTarget
  url: string
  secret: string | null
  /** The account configuration's revision (account target only): its failure run is counted per revision. */
  revision: string | null
}

/** Nothing to deliver to: no per-command URL and no active account webhook, or no finished command. */
export interface Dropped {
  dropped: string
}

/**
 * One attempt of a delivery, made by whoever holds the delivery: finds its
 * target, sends, logs the end, and keeps the account webhook's failure run.
 */
export class AttemptRunner {
  readonly #deps: AttemptRunnerDeps
  /** Reads of an account's webhook configuration in flight, shared by the attempts that ask meanwhile. */
  readonly #targetReads = new Map<string, ReturnType<WebhookConfigRepository['findDeliveryTarget']>>()

  constructor(deps: AttemptRunnerDeps) {
    this.#deps = deps
  }

  /** The attempt's target and body: from the completion's snapshot when given, else the command as it is now. */
  async resolve(ref: DeliveryRef, snapshot?: CompletionSnapshot): Promise<ResolvedTarget | Dropped> {
    const command = snapshot ? { poll: snapshot.poll as CommandPollResponse, webhookUrl: snapshot.webhook_url } : await this.#loadCommand(ref)
    if ('dropped' in command) return command
    const { poll, webhookUrl } = command
    const config = await this.#deliveryTarget(ref.accountId)
    // Per-command URLs are signed with the account's secret too (spec: same payload and signature).
    if (webhookUrl) {
      return { poll, target: 'command', url: webhookUrl, secret: config?.secret ?? null, revision: null }
    }
    if (!config || !config.is_active) return { dropped: 'the account has no active webhook' }
    return { poll, target: 'account', url: config.url, secret: config.secret, revision: config.revision }
  }

  /** Retries and redeliveries send the command as it is now (deleted files show as deleted). */
  async #loadCommand(ref: DeliveryRef): Promise<{ poll: CommandPollResponse; webhookUrl: string | null } | Dropped> {
    const command = await this.#deps.commands.find(ref.accountId, ref.commandId)
    if (!command) return { dropped: 'the command does not exist' }
    if (command.status !== 'SUCCESS' && command.status !== 'FAILED') return { dropped: `the command is ${command.status}, not finished` }
    return { poll: toPollResponse(command), webhookUrl: command.webhook_url }
  }

  /** Sends attempt `attempt` and logs its end; returns the logged end (another holder's, if it logged first). */
  async send(ref: DeliveryRef, attempt: number, resolved: ResolvedTarget): Promise<AttemptRecord> {
    const { sender, clock } = this.#deps
    const startedAt = clock()
    const request = buildWebhookRequest({ poll: resolved.poll, timestampMs: startedAt.getTime(), deliveryId: ref.deliveryId, attempt, secret: resolved.secret })
    const result = await sender.send(resolved.url, request)
    this.#deps.metrics?.attempt(result.outcome)
    const log = this.#attemptLogger(ref, attempt)
    if (result.outcome === 'success') log.info({ target: resolved.target, status_code: result.status_code, duration_ms: result.duration_ms }, 'webhook delivered')
    else log.warn({ target: resolved.target, status_code: result.status_code, error: result.error, duration_ms: result.duration_ms }, 'webhook attempt failed')
    return this.#logEnd({ ...this.#entry(ref, attempt, resolved), ...result, started_at: startedAt, finished_at: clock(), logged_seq: loggedSeq() })
  }

  /**
   * The end of an attempt that an earlier holder took and lost: its log entry
   * if it got that far; otherwise the attempt counts as failed now, and is not
   * sent again, since the receiver may have got it.
   */
  async takeOver(ref: DeliveryRef, attempt: number): Promise<AttemptRecord | Dropped> {
    const logged = await this.#deps.log.find(ref.deliveryId, attempt)
    if (logged) return logged
    const resolved = await this.resolve(ref)
    if ('dropped' in resolved) return resolved
    const now = this.#deps.clock()
    this.#attemptLogger(ref, attempt).warn('webhook attempt abandoned by a stopped deliverer')
    return this.#logEnd({
      ...this.#entry(ref, attempt, resolved),
      outcome: 'failure',
      status_code: null,
      error: 'abandoned: the deliverer stopped during this attempt',
      duration_ms: 0,
      started_at: now,
      finished_at: now,
      logged_seq: loggedSeq(),
    })
  }

  #entry(ref: DeliveryRef, attempt: number, resolved: ResolvedTarget) {
    return {
      _id: attemptKey(ref.deliveryId, attempt),
      delivery_id: ref.deliveryId,
      command_id: ref.commandId,
      account_id: ref.accountId,
      target: resolved.target,
      url: resolved.url,
      attempt,
      config_revision: resolved.revision,
    }
  }

  /**
   * The account's webhook configuration: a burst of completions for one
   * account reads it once instead of once per command. A shared read starts
   * no earlier than its first caller asked, so nobody gets an answer older
   * than a read they could have made themselves.
   */
  #deliveryTarget(accountId: string): ReturnType<WebhookConfigRepository['findDeliveryTarget']> {
    const running = this.#targetReads.get(accountId)
    if (running) return running
    const read = this.#deps.configs.findDeliveryTarget(accountId).finally(() => this.#targetReads.delete(accountId))
    this.#targetReads.set(accountId, read)
    return read
  }

  #attemptLogger(ref: DeliveryRef, attempt: number): Logger {
    return this.#deps.logger.child({ command_id: ref.commandId, account_id: ref.accountId, delivery_id: ref.deliveryId, attempt })
  }

  /** The failure run counts an attempt once: only the writer whose log entry went in counts it. */
  async #logEnd(entry: AttemptRecord): Promise<AttemptRecord> {
    const { record, logged } = await this.#deps.log.record(entry)
    if (logged) await this.#updateFailureRun(record)
    return record
  }

  /** Account-level attempts only (spec: per-command URLs never touch the counter). */
  async #updateFailureRun(record: AttemptRecord): Promise<void> {
    if (record.target !== 'account' || record.config_revision === null) return
    const { configs } = this.#deps
    if (record.outcome === 'success') return configs.recordSuccess(record.account_id, record.config_revision)
    const { config, disabled } = await configs.recordFailure(record.account_id, record.config_revision)
    if (disabled) {
      this.#deps.logger.warn({ account_id: record.account_id, command_id: record.command_id, consecutive_failures: config?.consecutive_failures }, 'account webhook disabled after consecutive failures')
    }
  }
}
