/**
 * The log projector: a durable JetStream consumer of FFKUBE_LOGS that folds
 * runners' log chunks into each command's log record (log-record.ts). Like
 * the status projector, one command's chunks are worked one round at a time
 * (a backlog in one write), every write expects the revision it read and
 * folds again when another replica wrote first, and chunks are acknowledged
 * only after their write, so a crash replays them into a no-op.
 */
import { JSONCodec, type ConsumerMessages, type JsMsg, type NatsConnection } from 'nats'
import { LOG_STREAM, type LogChunk } from '../../contracts/log-chunks.js'
import { ensureDurableConsumer, ensureStream, LOG_STREAM_DEFINITION } from '../../contracts/nats-streams.js'
import type { Logger } from '../logger.js'
import { CoalescingQueues } from '../projector/coalescing-queues.js'
import type { CommandLogRepository } from './command-log-repository.js'
import { foldChunks, type IncomingChunk } from './log-record.js'

const codec = JSONCodec<LogChunk>()

/** A round that keeps losing its write gives up and naks (the chunks come back shortly). */
const MAX_WRITE_ATTEMPTS = 20
/** How many commands' "log already written" this process remembers; one it forgot costs a failed insert, then the read. */
const WRITTEN_MEMORY = 4096

export interface LogProjectorOptions {
  nats: NatsConnection
  logs: CommandLogRepository
  logger: Logger
}

interface Delivery {
  chunk: IncomingChunk
  msg: JsMsg
}

export class LogProjector {
  readonly #logs: CommandLogRepository
  readonly #log: Logger
  readonly #queues: CoalescingQueues<Delivery>
  /** Commands whose log this process wrote lately (the last WRITTEN_MEMORY), oldest first. */
  readonly #written = new Set<string>()
  #messages: ConsumerMessages | null = null
  #loop: Promise<void> | null = null

  constructor(private readonly options: LogProjectorOptions) {
    this.#log = options.logger.child({ component: 'log-projector' })
    this.#logs = options.logs
    this.#queues = new CoalescingQueues<Delivery>(
      (commandId, take) => this.#round(commandId, take),
      (err, commandId) => this.#log.error({ err, command_id: commandId }, 'log projection round failed'),
    )
  }

  /** Creates the stream and the durable consumer when missing, then consumes until stop(). */
  async start(): Promise<void> {
    const { nats } = this.options
    await ensureStream(nats, LOG_STREAM_DEFINITION)
    const durable = 'ffkube-log-projector'
    await ensureDurableConsumer(nats, LOG_STREAM, durable)
    const consumer = await nats.jetstream().consumers.get(LOG_STREAM, durable)
    this.#messages = await consumer.consume({ max_messages: 256 })
    this.#loop = this.#run(this.#messages)
    this.#log.info({ durable }, 'log projector started')
  }

  /** Stops taking chunks and waits for those in hand. */
  async stop(): Promise<void> {
    if (!this.#messages) return
    this.#messages.stop()
    await this.#loop
    await this.#queues.idle()
    this.#messages = null
  }

  async #run(messages: ConsumerMessages): Promise<void> {
    for await (const msg of messages) {
      let chunk: LogChunk
      try {
        chunk = codec.decode(msg.data)
        if (typeof chunk.command_id !== 'string' || typeof chunk.text !== 'string') throw new Error('not a log chunk')
      } catch (err) {
        this.#log.error({ err, subject: msg.subject }, 'unreadable log chunk dropped')
        msg.ack()
        continue
      }
      // The stream's sequence, not the runner's: it orders the chunks of every phase of the command.
      this.#queues.push(chunk.command_id, { chunk: { seq: msg.seq, text: chunk.text, droppedBytes: chunk.dropped_bytes ?? 0 }, msg })
    }
  }

  async #round(commandId: string, take: () => Delivery[]): Promise<void> {
    const batch = take()
    try {
      await this.#apply(commandId, batch.map((d) => d.chunk))
    } catch (err) {
      this.#log.warn({ err, command_id: commandId, chunks: batch.length }, 'log chunks not applied; will retry')
      for (const { msg } of batch) msg.nak(2_000)
      return
    }
    for (const { msg } of batch) msg.ack()
  }

  /**
   * Folds the chunks into the command's log. A command this process has not
   * written a log for yet most likely has none: its first round tries the
   * insert without reading (one operation instead of two per command), and
   * reads only when the insert finds a record there (another round, replica
   * or start came first).
   */
  async #apply(commandId: string, chunks: readonly IncomingChunk[]): Promise<void> {
    let assumeAbsent = !this.#written.has(commandId)
    for (let attempt = 1; attempt <= MAX_WRITE_ATTEMPTS; attempt++) {
      const read = assumeAbsent ? null : await this.#logs.find(commandId)
      assumeAbsent = false
      const next = foldChunks(read, chunks)
      if (!next || (await this.#logs.write(commandId, read, next))) {
        this.#remember(commandId)
        return
      }
    }
    throw new Error(`the log changed under ${MAX_WRITE_ATTEMPTS} writes in a row`)
  }

  #remember(commandId: string): void {
    this.#written.delete(commandId)
    this.#written.add(commandId)
    if (this.#written.size > WRITTEN_MEMORY) this.#written.delete(this.#written.values().next().value as string)
  }
}
