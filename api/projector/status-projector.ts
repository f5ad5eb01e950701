/**
 * The status projector: a durable JetStream consumer of FFKUBE_STATUS that
 * applies runners' events to the command records, forward only. After
 * dispatch a record has no other writer (FerretDB 1.x updates are
 * read-modify-write, so two writers could undo each other), and the events of
 * one command are applied in stream order, one round at a time, by a
 * per-command work list. A round reads the record, then takes every event of
 * the command that has arrived by then (a backlog is applied together, a lone
 * event at once: nothing waits for more), folds them through the pure
 * functions of projection.ts and writes once; it acknowledges its events only
 * after that write and, when one is terminal, after the CompletionEvent's
 * publish, so a crash in between replays them: the write is then a no-op and
 * the publish is de-duplicated by its Nats-Msg-Id. A round that fails
 * naks all its events.
 *
 * Every round reads the record, even when this process wrote it last (the
 * dispatcher writes before the runner starts; the files routes only after the
 * terminal state): with several worker replicas sharing the durable consumer,
 * NATS may hand a command's later events, its terminal one included, to
 * another replica between two of this one's rounds, and a write computed from
 * a remembered copy would then set PROCESSING over that replica's SUCCESS.
 * The read narrows this to the read-modify-write window that remains. A write
 * guarded by the expected status would close it, but FerretDB 1.x answers any
 * filter beyond `{_id}` with a scan of the collection, dearer than the read.
 */
import { GetObjectCommand, type S3Client } from '@aws-sdk/client-s3'
import { getSignedUrl } from '@aws-sdk/s3-request-presigner'
import type { Collection, Db } from 'mongodb'
import { AckPolicy, DeliverPolicy, JSONCodec, type ConsumerMessages, type JetStreamClient, type JsMsg, type NatsConnection } from 'nats'
import { completionEventId, completionSubject, type CompletionEvent } from '../../contracts/completion-events.js'
import { COMPLETION_STREAM_DEFINITION, ensureStream, STATUS_STREAM_DEFINITION } from '../../contracts/nats-streams.js'
import { STATUS_STREAM, type StatusEvent } from '../../contracts/status-events.js'
import { systemClock, type Clock } from '../clock.js'
import { toPollResponse, type CommandDocument } from '../commands/command-document.js'
import { commandsCollection } from '../commands/command-repository.js'
import type { FileDocument } from '../files/file-document.js'
import type { Logger } from '../logger.js'
import type { ProjectionRecorder } from '../metrics/service-metrics.js'
import { CoalescingQueues } from './coalescing-queues.js'
import { endingEvent, foldEvents, isTerminal, isTerminalEvent, outputFileDocument } from './projection.js'
import { publicUrlFor } from '../storage-destinations/destination-spec.js'
import { isDuplicateKey } from '../duplicate-key.js'

const codec = JSONCodec()

/** SigV4's longest validity: a presigned storage_url works for seven days after the command ends. */
export const STORAGE_URL_TTL_SECONDS = 7 * 24 * 3600

export interface StatusProjectorOptions {
  nats: NatsConnection
  db: Db
  /** Signs storage_url for managed outputs. */
  s3: S3Client
  logger: Logger
  now?: Clock
  durableName?: string
  /** Events in flight across all commands; one command's are still applied one round at a time. */
  maxAckPending?: number
  metrics?: ProjectionRecorder
}

/** Presigns a GET of an object in the managed bucket (a local computation, no request). */
export function presignGet(s3: S3Client, bucket: string, key: string): Promise<string> {
  return getSignedUrl(s3, new GetObjectCommand({ Bucket: bucket, Key: key }), { expiresIn: STORAGE_URL_TTL_SECONDS })
}

/** An event and the message it came in, acknowledged once the event is applied. */
interface Delivery {
  event: StatusEvent
  msg: JsMsg
}

export class StatusProjector {
  readonly #commands: Collection<CommandDocument>
  readonly #files: Collection<FileDocument>
  readonly #log: Logger
  readonly #now: Clock
  readonly #queues: CoalescingQueues<Delivery>
  #js: JetStreamClient | null = null
  #messages: ConsumerMessages | null = null
  #loop: Promise<void> | null = null

  constructor(private readonly options: StatusProjectorOptions) {
    this.#commands = commandsCollection(options.db)
    this.#files = options.db.collection<FileDocument>('files')
    this.#log = options.logger.child({ component: 'status-projector' })
    this.#now = options.now ?? systemClock
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
    const durable = this.options.durableName ?? 'ffkube-status-projector'
    const jsm = await nats.jetstreamManager()
    try {
      await jsm.consumers.info(STATUS_STREAM, durable)
    } catch {
      await jsm.consumers.add(STATUS_STREAM, {
        durable_name: durable,
        ack_policy: AckPolicy.Explicit,
        deliver_policy: DeliverPolicy.All,
        ack_wait: 30_000_000_000,
        max_ack_pending: this.options.maxAckPending ?? 512,
      })
    }
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

  /**
   * One round for a command: reads the record, then takes every event waiting
   * for it (those that arrived during the read included), applies them with at
   * most one write, and acknowledges them all, or naks them all.
   */
  async #round(commandId: string, take: () => Delivery[]): Promise<void> {
    const read = await this.#commands.findOne({ _id: commandId }).then(
      (doc) => ({ doc, err: null }),
      (err: unknown) => ({ doc: null, err }),
    )
    const batch = take()
    try {
      if (read.err) throw read.err
      await this.#project(commandId, read.doc, batch.map((d) => d.event))
    } catch (err) {
      // MongoDB, S3 signing or NATS unavailable: try again shortly; the events stay unacknowledged.
      this.#log.warn({ err, command_id: commandId, events: batch.length }, 'status events not applied; will retry')
      for (const { msg } of batch) msg.nak(2_000)
      return
    }
    for (const { event, msg } of batch) {
      msg.ack()
      this.options.metrics?.eventApplied(event.type)
    }
  }

  /** Applies one event; safe to call again with the same event. */
  async apply(event: StatusEvent): Promise<void> {
    await this.#project(event.command_id, await this.#commands.findOne({ _id: event.command_id }), [event])
  }

  /** Applies events of one command, in stream order, to its record as read: one write at most, then the completion event if one is terminal. */
  async #project(commandId: string, doc: CommandDocument | null, events: readonly StatusEvent[]): Promise<void> {
    const log = this.#log.child({ command_id: commandId })
    if (!doc) {
      log.warn({ event_ids: events.map((e) => e.event_id) }, 'status events for an unknown command dropped')
      return
    }
    const now = this.#now()
    const ending = endingEvent(doc, events)
    const outputs = ending?.type === 'SUCCESS' ? await this.#storeOutputs(doc, ending, now) : {}
    const { doc: after, set } = foldEvents(doc, events, outputs, now)
    if (set) await this.#commands.updateOne({ _id: doc._id }, { $set: set })
    if (ending) {
      log.info({ status: ending.type, error_status: ending.type === 'FAILED' ? ending.error_status : null, events: events.length }, 'command finished')
      this.options.metrics?.commandFinished(ending.type)
    }
    // Announced again on a replay after a crash between the write and the ack (the record was terminal already): de-duplicated by msgID.
    if (events.some(isTerminalEvent) && isTerminal(after.status)) {
      await this.#announce(after, after.status as 'SUCCESS' | 'FAILED', after.completed_at ?? after.updated_at)
    }
  }

  /** Inserts a files record per output (deterministic ids: a replay inserts nothing new). */
  async #storeOutputs(doc: CommandDocument, event: StatusEvent & { type: 'SUCCESS' }, now: Date): Promise<Record<string, FileDocument>> {
    const outputs: Record<string, FileDocument> = {}
    for (const [alias, result] of Object.entries(event.output_files)) {
      // An external output's storage_url is its public URL when the destination has a public_base_url, else null.
      const url =
        result.storage_location === 'INTERNAL'
          ? await presignGet(this.options.s3, result.bucket, result.object_key)
          : publicUrlFor(doc.storage_destination?.publicBaseUrl, result.object_key)
      const file = outputFileDocument(doc, alias, result, url, now)
      try {
        await this.#files.insertOne(file)
      } catch (err) {
        if (!isDuplicateKey(err)) throw err
      }
      outputs[alias] = file
    }
    return outputs
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
