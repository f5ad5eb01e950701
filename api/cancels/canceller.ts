/**
 * Carries out the cancels the API records (POST /commands/:id/cancel). The
 * API writes the request on the command record, waiting (CANCEL_FIELDS, a
 * work list like the dispatch outbox); this worker-side loop claims each one
 * and, in order:
 *
 *   1. publishes FAILED / CANCELLED as the runner's own FAILED event (same
 *      Nats-Msg-Id, contracts/status-events.ts), so the status projector, the
 *      only writer of a command's status, ends it and announces the webhook.
 *      First, so that whatever the dying run reports after it (a killed
 *      ffmpeg's failure, a late SUCCESS) comes later in the stream and
 *      changes nothing: no output of a cancelled command is recorded;
 *   2. takes the command out of the dispatch outbox if no dispatcher holds it
 *      (then it never runs); if one does, waits for that hand-off to end;
 *   3. asks the executor to stop the run, if there is one (local: kill the
 *      runner's process group, remove its work dir; Kubernetes: mark the
 *      MediaCommand cancelled, the operator deletes its Job and pods);
 *   4. marks the cancel done.
 *
 * A crash anywhere leaves the cancel claimed until its lease ends, then it is
 * taken again; every step is idempotent. Who writes what: the API the
 * request (cancel_requested_at, once), the canceller the cancel's work fields
 * and the dispatch withdrawal, the projector the status; on Kubernetes the
 * canceller sets spec.cancel and the operator alone writes the CR's status.
 */
import type { JetStreamClient, NatsConnection } from 'nats'
import { failedEvent } from '../../contracts/status-events.js'
import { publishStatusEvent } from '../../contracts/status-publisher.js'
import { systemClock, type Clock } from '../clock.js'
import { CANCELLED, type CommandDocument } from '../commands/command-document.js'
import type { CommandRepository } from '../commands/command-repository.js'
import { dispatchBackoffMs } from '../dispatcher/backoff.js'
import type { Executor } from '../executors/executor.js'
import type { Logger } from '../logger.js'
import { PollingLoop } from '../polling-loop.js'
import type { Claim, WorkList } from '../work-list.js'

/** How soon to look again at a cancel whose command a dispatcher is handing off right now. */
const HAND_OFF_WAIT_MS = 250

export interface CancellerOptions {
  /** The cancel requests (`cancels`) and the hand-offs they withdraw. */
  commands: CommandRepository
  nats: NatsConnection
  executor: Executor
  logger: Logger
  now?: Clock
  pollIntervalMs?: number
  leaseMs?: number
  /** Counts the cancels carried out. */
  onCancelled?: () => void
}

export class Canceller {
  readonly #commands: CommandRepository
  readonly #cancels: WorkList<CommandDocument>
  readonly #log: Logger
  readonly #now: Clock
  readonly #polling: PollingLoop
  readonly #leaseMs: number
  #js: JetStreamClient | null = null

  constructor(private readonly options: CancellerOptions) {
    this.#commands = options.commands
    this.#cancels = this.#commands.cancels
    this.#log = options.logger.child({ component: 'canceller' })
    this.#now = options.now ?? systemClock
    this.#leaseMs = options.leaseMs ?? 30_000
    this.#polling = new PollingLoop(
      { drain: () => this.drain() },
      { pollIntervalMs: options.pollIntervalMs ?? 1_000, log: this.#log, roundFailed: 'cancel round failed' },
    )
  }

  start(): void {
    if (this.#polling.running) return
    this.#js = this.options.nats.jetstream()
    this.#polling.start()
  }

  async stop(): Promise<void> {
    await this.#polling.stop()
  }

  /** A cancel was just recorded in this process: look now. */
  nudge(): void {
    if (this.#polling.running) this.#polling.nudge()
  }

  /** Carries out every due cancel, one at a time (they are rare and each is quick); returns how many ended. */
  async drain(): Promise<number> {
    let done = 0
    for (;;) {
      const claim = await this.#cancels.claimNext(this.#now(), this.#leaseMs)
      if (!claim) return done
      if (await this.#carryOut(claim)) done += 1
    }
  }

  async #carryOut(claim: Claim<CommandDocument>): Promise<boolean> {
    const commandId = claim.doc._id
    const log = this.#log.child({ command_id: commandId, account_id: claim.doc.account_id })
    try {
      // 1: the projector ends it; a copy published before (a retry of this cancel) is the same event.
      const event = failedEvent({ commandId, errorStatus: CANCELLED, errorMessage: 'the command was cancelled by the client', at: this.#now() })
      await publishStatusEvent(this.#js ?? this.options.nats.jetstream(), event, { logger: log })
      // 2: never dispatched, or a hand-off in flight to wait for.
      const withdrawn = await this.#commands.withdrawDispatch(commandId, this.#now())
      if (!withdrawn && (await this.#commands.dispatchPending(commandId))) {
        await this.#cancels.putOff(claim, new Date(this.#now().getTime() + HAND_OFF_WAIT_MS))
        return false
      }
      // 3: a command taken out of the outbox has no run, unless a restart had started one before.
      await this.options.executor.cancel?.(commandId)
      // 4
      if (await this.#cancels.finish(claim)) {
        log.info({ withdrawn }, 'command cancelled')
        this.options.onCancelled?.()
      }
      return true
    } catch (err) {
      const retryInMs = dispatchBackoffMs(claim.doc.cancel_attempts ?? 1)
      log.warn({ err, retry_in_ms: retryInMs }, 'cancel failed; will retry')
      await this.#cancels.putOff(claim, new Date(this.#now().getTime() + retryInMs))
      return false
    }
  }
}
