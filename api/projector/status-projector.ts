/**
 * The status projector: a durable JetStream consumer of FFKUBE_STATUS that
 * applies runners' events to the command records, forward only. After
 * dispatch a record has no other writer (FerretDB 1.x updates are
 * read-modify-write, so two writers could undo each other), and the events of
 * one command are applied one at a time, in stream order, by a per-command
 * chain. A terminal event is acknowledged only after its write and its
 * CompletionEvent's publish, so a crash in between replays it: the write is
 * then a no-op and the publish is de-duplicated by its Nats-Msg-Id.
 */
import { GetObjectCommand, type S3Client } from '@aws-sdk/client-s3'
import { getSignedUrl } from '@aws-sdk/s3-request-presigner'
import { MongoServerError, type Collection, type Db } from 'mongodb'
import { AckPolicy, DeliverPolicy, JSONCodec, type ConsumerMessages, type JetStreamClient, type JsMsg, type NatsConnection } from 'nats'
import { completionEventId, completionSubject, type CompletionEvent } from '../../contracts/completion-events.js'
import { STATUS_STREAM, type StatusEvent } from '../../contracts/status-events.js'
import { systemClock, type Clock } from '../clock.js'
import { toPollResponse, type CommandDocument } from '../commands/command-document.js'
import { commandsCollection } from '../commands/command-repository.js'
import type { FileDocument } from '../files/file-document.js'
import type { Logger } from '../logger.js'
import type { ProjectionRecorder } from '../metrics/service-metrics.js'
import { isTerminal, outputFileDocument, processingUpdate, terminalUpdate } from './projection.js'
import { ensureCompletionStream, ensureStatusStream } from './streams.js'
import { publicUrlFor } from '../storage-destinations/destination-spec.js'

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
  /** Events in flight across all commands; one command's are still applied one at a time. */
  maxAckPending?: number
  metrics?: ProjectionRecorder
}

/** Presigns a GET of an object in the managed bucket (a local computation, no request). */
export function presignGet(s3: S3Client, bucket: string, key: string): Promise<string> {
  return getSignedUrl(s3, new GetObjectCommand({ Bucket: bucket, Key: key }), { expiresIn: STORAGE_URL_TTL_SECONDS })
}

export class StatusProjector {
  readonly #commands: Collection<CommandDocument>
  readonly #files: Collection<FileDocument>
  readonly #log: Logger
  readonly #now: Clock
  readonly #chains = new Map<string, Promise<void>>()
  #js: JetStreamClient | null = null
  #messages: ConsumerMessages | null = null
  #loop: Promise<void> | null = null

  constructor(private readonly options: StatusProjectorOptions) {
    this.#commands = commandsCollection(options.db)
    this.#files = options.db.collection<FileDocument>('files')
    this.#log = options.logger.child({ component: 'status-projector' })
    this.#now = options.now ?? systemClock
  }

  /** Creates the streams and the durable consumer when missing, then consumes until stop(). */
  async start(): Promise<void> {
    const { nats } = this.options
    await ensureStatusStream(nats)
    await ensureCompletionStream(nats)
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
    await Promise.all(this.#chains.values())
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
      this.#enqueue(event, msg)
    }
  }

  /** Chains the event after its command's earlier ones, so one command's events never race. */
  #enqueue(event: StatusEvent, msg: JsMsg): void {
    const id = event.command_id
    const previous = this.#chains.get(id) ?? Promise.resolve()
    const next = previous.then(() => this.#handle(event, msg))
    this.#chains.set(id, next)
    void next.finally(() => {
      if (this.#chains.get(id) === next) this.#chains.delete(id)
    })
  }

  async #handle(event: StatusEvent, msg: JsMsg): Promise<void> {
    const log = this.#log.child({ command_id: event.command_id, event_id: event.event_id })
    try {
      await this.apply(event)
      msg.ack()
      this.options.metrics?.eventApplied(event.type)
    } catch (err) {
      // MongoDB, S3 signing or NATS unavailable: try again shortly; the event stays unacknowledged.
      log.warn({ err }, 'status event not applied; will retry')
      msg.nak(2_000)
    }
  }

  /** Applies one event; safe to call again with the same event. */
  async apply(event: StatusEvent): Promise<void> {
    const doc = await this.#commands.findOne({ _id: event.command_id })
    const log = this.#log.child({ command_id: event.command_id })
    if (!doc) {
      log.warn({ event_id: event.event_id }, 'status event for an unknown command dropped')
      return
    }
    const now = this.#now()
    if (event.type === 'PROCESSING') {
      const update = processingUpdate(doc, event, now)
      if (update) await this.#commands.updateOne({ _id: doc._id }, { $set: update })
      return
    }
    if (isTerminal(doc.status)) {
      // A replay after a crash between the write and the ack: announce again (de-duplicated by msgID).
      await this.#announce(doc, doc.status as 'SUCCESS' | 'FAILED', doc.completed_at ?? doc.updated_at)
      return
    }
    const outputs = event.type === 'SUCCESS' ? await this.#storeOutputs(doc, event, now) : {}
    const update = terminalUpdate(doc, event, outputs, now)
    if (!update) return
    await this.#commands.updateOne({ _id: doc._id }, { $set: update })
    log.info({ status: event.type, error_status: event.type === 'FAILED' ? event.error_status : null }, 'command finished')
    this.options.metrics?.commandFinished(event.type)
    await this.#announce({ ...doc, ...update } as CommandDocument, event.type, now)
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
        if (!(err instanceof MongoServerError && err.code === 11000)) throw err
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
