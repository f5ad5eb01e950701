/**
 * The status projector: a durable JetStream consumer of FFKUBE_STATUS that
 * applies runners' events to the command records, forward only. The events
 * of one command are applied in stream order, one round at a time, by a
 * per-command work list. A round reads the record, then takes every event of
 * the command that has arrived by then (a backlog is applied together, a lone
 * event at once: nothing waits for more), folds them through the pure
 * functions of projection.ts and writes once; it acknowledges its events only
 * after that write and, when one is terminal, after the CompletionEvent's
 * publish, so a crash in between replays them: the write is then a no-op and
 * the publish is de-duplicated by its Nats-Msg-Id. A round that fails naks
 * all its events.
 *
 * Several worker replicas share the durable consumer, so NATS may hand a
 * command's later events, its terminal one included, to another replica
 * while this one is between its read and its write. Every write therefore
 * names the revision of the record it was folded from and lands only if the
 * record is still at it; when another replica wrote first, the round reads
 * again and folds the same events into what that replica left. A PROCESSING
 * round can thus never put PROCESSING back over another replica's SUCCESS,
 * and a terminal event is never lost to a concurrent progress write.
 */
import { JSONCodec, type ConsumerMessages, type JetStreamClient, type JsMsg, type NatsConnection } from 'nats'
import { completionEventId, completionSubject, type CompletionEvent } from '../../contracts/completion-events.js'
import { COMPLETION_STREAM_DEFINITION, ensureDurableConsumer, ensureStream, STATUS_STREAM_DEFINITION } from '../../contracts/nats-streams.js'
import { COMMAND_ENDED_NUDGE, commandChangedSubject } from '../../contracts/command-changes.js'
import { commandFolder, misplacedOutput } from '../../contracts/command-folder.js'
import { STATUS_STREAM, type FailedEvent, type OutputFileResult, type StatusEvent, type SuccessEvent } from '../../contracts/status-events.js'
import { systemClock, type Clock } from '../clock.js'
import { toPollResponse, type CommandDocument } from '../commands/command-document.js'
import type { CommandRepository } from '../commands/command-repository.js'
import type { OutputFileMeta } from '../commands/schemas.js'
import type { FileRepository } from '../files/file-repository.js'
import { outputFileMeta, outputObjectKeys } from '../files/output-files.js'
import type { Logger } from '../logger.js'
import type { ProjectionRecorder } from '../metrics/service-metrics.js'
import { CoalescingQueues } from './coalescing-queues.js'
import { isTerminalStatus } from '../../contracts/command-types.js'
import { endingEvent, foldEvents, isTerminalEvent, refusedAsMisplaced, refusedForQuota } from './projection.js'

const codec = JSONCodec()

/**
 * A round that keeps losing its write to other replicas gives up and naks
 * its events (they come back shortly). Each loss means another replica moved
 * the record on, so this is never reached while replicas make progress.
 */
const MAX_WRITE_ATTEMPTS = 20

export interface StatusProjectorOptions {
  nats: NatsConnection
  /** The records it projects onto (its reads and writes: findForProjection, writeProjection). */
  commands: CommandRepository
  /** Where a SUCCESS's outputs are recorded, with their signed storage_url. */
  files: FileRepository
  logger: Logger
  now?: Clock
  metrics?: ProjectionRecorder
  /** A command ended (its terminal status is written): the in-process dispatcher may give its account's slot to the next command. */
  onCommandEnded?: (accountId: string) => void
}

/** An event and the message it came in, acknowledged once the event is applied. */
interface Delivery {
  event: StatusEvent
  msg: JsMsg
}

export class StatusProjector {
  readonly #commands: CommandRepository
  readonly #files: FileRepository
  readonly #log: Logger
  readonly #now: Clock
  readonly #queues: CoalescingQueues<Delivery>
  #js: JetStreamClient | null = null
  #messages: ConsumerMessages | null = null
  #loop: Promise<void> | null = null

  constructor(private readonly options: StatusProjectorOptions) {
    this.#log = options.logger.child({ component: 'status-projector' })
    this.#now = options.now ?? systemClock
    this.#commands = options.commands
    this.#files = options.files
    this.#queues = new CoalescingQueues<Delivery>(
      (commandId, take) => this.#round(commandId, take),
      // #round settles its events itself; this is a bug, and its events come back after ack_wait.
      (err, commandId) => this.#log.error({ err, command_id: commandId }, 'status projection round failed'),
    )
  }

  /** Creates the streams and the durable consumer when missing, then consumes until stop(). */
  async start(): Promise<void> {
    const { nats } = this.options
    await ensureStream(nats, STATUS_STREAM_DEFINITION)
    await ensureStream(nats, COMPLETION_STREAM_DEFINITION)
    const durable = 'ffkube-status-projector'
    await ensureDurableConsumer(nats, STATUS_STREAM, durable)
    this.#js = nats.jetstream()
    const consumer = await this.#js.consumers.get(STATUS_STREAM, durable)
    this.#messages = await consumer.consume({ max_messages: 256 })
    this.#loop = this.#run(this.#messages)
    this.#log.info({ durable }, 'status projector started')
  }

  /** Stops taking events and waits for those in hand; unacknowledged ones are redelivered to the next start. */
  async stop(): Promise<void> {
    if (!this.#messages) return
    this.#messages.stop()
    await this.#loop
    await this.#queues.idle()
    this.#messages = null
    this.#log.info('status projector stopped')
  }

  async #run(messages: ConsumerMessages): Promise<void> {
    for await (const msg of messages) {
      let event: StatusEvent
      try {
        event = codec.decode(msg.data) as StatusEvent
        if (typeof event.command_id !== 'string' || typeof event.type !== 'string') throw new Error('not a status event')
      } catch (err) {
        // Nothing can apply it, ever: acknowledge so it does not come back.
        this.#log.error({ err, subject: msg.subject }, 'unreadable status event dropped')
        msg.ack()
        continue
      }
      this.#queues.push(event.command_id, { event, msg })
    }
  }

  /** Commands with a round running or events waiting. */
  get busy(): number {
    return this.#queues.busy
  }

  /**
   * One round for a command: reads the record, then takes every event waiting
   * for it (those that arrived during the read included), applies them, and
   * acknowledges them all, or naks them all.
   */
  async #round(commandId: string, take: () => Delivery[]): Promise<void> {
    const read = await this.#read(commandId).then(
      (doc) => ({ doc, err: null }),
      (err: unknown) => ({ doc: null, err }),
    )
    const batch = take()
    try {
      if (read.err) throw read.err
      await this.#project(commandId, read.doc, batch.map((d) => d.event))
    } catch (err) {
      // MongoDB, S3 signing or NATS unavailable, or the write lost too often: try again shortly; the events stay unacknowledged.
      this.#log.warn({ err, command_id: commandId, events: batch.length }, 'status events not applied; will retry')
      for (const { msg } of batch) msg.nak(2_000)
      return
    }
    for (const { event, msg } of batch) {
      msg.ack()
      this.options.metrics?.eventApplied(event.type)
    }
  }

  #read(commandId: string): Promise<CommandDocument | null> {
    return this.#commands.findForProjection(commandId)
  }

  /**
   * Applies events of one command, in stream order, to its record as read,
   * and again to a fresh read each time another replica wrote first; then
   * announces the completion if one of them is terminal.
   */
  async #project(commandId: string, read: CommandDocument | null, events: readonly StatusEvent[]): Promise<void> {
    const log = this.#log.child({ command_id: commandId })
    let doc = read
    for (let attempt = 1; ; attempt++) {
      if (!doc) {
        log.warn({ event_ids: events.map((e) => e.event_id) }, 'status events for an unknown command dropped')
        return
      }
      const now = this.#now()
      const reported = endingEvent(doc, events)
      const refusal = reported?.type === 'SUCCESS' ? await this.#refusal(doc, reported, log) : null
      const applied = refusal === null ? events : events.map((event) => (event === reported ? refusal.failed : event))
      const ending = endingEvent(doc, applied)
      const outputs = ending?.type === 'SUCCESS' ? await this.#storeOutputs(doc, ending, now) : {}
      const { doc: after, set } = foldEvents(doc, applied, outputs, now)
      if (set) {
        if (!(await this.#commands.writeProjection(doc, set))) {
          if (attempt >= MAX_WRITE_ATTEMPTS) throw new Error(`the record changed under ${attempt} writes in a row`)
          log.debug({ revision: doc.projection_revision ?? 0 }, 'another replica wrote first; folding again')
          doc = await this.#read(commandId)
          continue
        }
        this.#nudgeWatchers(commandId, isTerminalStatus(after.status))
        // The record says FAILED first, then the bytes go: a crash in between leaves unreferenced objects, never a SUCCESS without its bytes.
        if (refusal?.discard && reported?.type === 'SUCCESS') await this.#discard(reported.output_files, log)
      }
      if (ending) {
        log.info({ status: ending.type, error_status: ending.type === 'FAILED' ? ending.error_status : null, events: events.length }, 'command finished')
        this.options.metrics?.commandFinished(ending.type)
        this.options.metrics?.commandDuration?.(doc.command_type, ending.type, after.total_processing_seconds ?? (now.getTime() - doc.created_at.getTime()) / 1000)
        this.options.onCommandEnded?.(doc.account_id)
        if (ending.type === 'FAILED') this.options.metrics?.commandFailedAs?.(ending.error_status)
      }
      // Announced again on a replay after a crash between the write and the ack (the record was terminal already): de-duplicated by msgID.
      if (events.some(isTerminalEvent) && isTerminalStatus(after.status)) {
        await this.#announce(after, after.status as 'SUCCESS' | 'FAILED', after.completed_at ?? after.updated_at)
      }
      return
    }
  }

  /**
   * Tells event streams watching the command to read it now
   * (api/commands/command-watch.ts). At most once and never awaited: a lost
   * nudge only delays an event to the watchers' fallback read. The write
   * that ended the command says so, and is read at once.
   */
  #nudgeWatchers(commandId: string, ended: boolean): void {
    try {
      this.options.nats.publish(commandChangedSubject(commandId), ended ? COMMAND_ENDED_NUDGE : undefined)
    } catch (err) {
      this.#log.debug({ err, command_id: commandId }, 'change nudge not published')
    }
  }

  /**
   * The FAILED a SUCCESS ends as instead, or null when it stands. First,
   * before anything is counted, signed or deleted: an output outside the
   * command's folder (contracts/command-folder.ts), which may name another tenant's
   * objects, so nothing of it is touched. Then managed outputs that would
   * pass the account's storage quota (storage-quota.ts): the command's own
   * objects, deleted once the record says FAILED.
   */
  async #refusal(doc: CommandDocument, success: SuccessEvent, log: Logger): Promise<{ failed: FailedEvent; discard: boolean } | null> {
    const folder = commandFolder(doc._id, doc.storage_destination ?? null, this.#files.storage.bucket)
    const misplaced = misplacedOutput(success.output_files, folder)
    if (misplaced) {
      const { alias, bucket, objectKey, reason } = misplaced
      log.warn({ account_id: doc.account_id, alias, bucket, object_key: objectKey, reason }, "a SUCCESS reporting an object outside its command's folder was refused")
      return { failed: refusedAsMisplaced(success, misplaced, folder), discard: false }
    }
    const quota = await this.#files.reserveOutputs(doc, success.output_files)
    return quota === null ? null : { failed: refusedForQuota(success, quota), discard: true }
  }

  /**
   * Deletes the objects of outputs the quota refused. A failure is logged with
   * the keys, not retried: the record is FAILED already, so a replay would not
   * come back here, and the objects are counted against nobody.
   */
  async #discard(results: Record<string, OutputFileResult>, log: Logger): Promise<void> {
    try {
      await this.#files.storage.deleteAll(outputObjectKeys(results))
    } catch (err) {
      log.warn({ err, object_keys: outputObjectKeys(results) }, 'the objects of outputs refused by the storage quota could not be deleted')
    }
  }

  /** The outputs of a SUCCESS as its command's result shows them, stored as files first. */
  async #storeOutputs(doc: CommandDocument, event: StatusEvent & { type: 'SUCCESS' }, now: Date): Promise<Record<string, OutputFileMeta>> {
    const files = await this.#files.insertOutputs(doc, event.output_files, now)
    return Object.fromEntries(Object.entries(files).map(([alias, file]) => [alias, outputFileMeta(file)]))
  }

  async #announce(doc: CommandDocument, status: 'SUCCESS' | 'FAILED', completedAt: Date): Promise<void> {
    const js = this.#js ?? this.options.nats.jetstream()
    const event: CompletionEvent = {
      command_id: doc._id,
      account_id: doc.account_id,
      status,
      completed_at: completedAt.toISOString(),
      snapshot: { poll: toPollResponse(doc), webhook_url: doc.webhook_url ?? null },
    }
    await js.publish(completionSubject(doc._id), codec.encode(event), { msgID: completionEventId(doc._id) })
  }
}
