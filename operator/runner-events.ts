/**
 * Follows the runner's status events (FFKUBE_STATUS) for the reconciler. Like
 * a watch's event handler, it writes nothing: it records what it learned in
 * RunnerReports under the MediaCommand's key and enqueues that key; the
 * reconciler, the CR status's one writer, folds the event in and only then
 * acknowledges it (runner-reports.ts).
 *
 * The stream is read through a durable consumer with explicit acks, one per
 * watched namespace and shared by its replicas, so a new leader resumes where
 * the old one stopped and an event not yet in a written status is delivered
 * again.
 */
import { AckPolicy, DeliverPolicy, JSONCodec, type ConsumerMessages, type JsMsg, type NatsConnection } from 'nats'
import type { Logger } from 'pino'
import { STATUS_STREAM, STATUS_SUBJECT_PREFIX, type StatusEvent } from '../contracts/status-events.js'
import { ensureStream, STATUS_STREAM_DEFINITION } from '../contracts/nats-streams.js'
import type { RunnerReports } from './runner-reports.js'

export interface RunnerEventsOptions {
  nats: NatsConnection
  /** The durable consumer's name (runnerEventsDurable). */
  durableName: string
  /** The `namespace/name` key of a command's MediaCommand, when the informer's cache has it. */
  keyOf: (commandId: string) => string | undefined
  reports: RunnerReports
  enqueue: (key: string) => void
  logger: Logger
}

/** An event for a command not (yet) in the cache is retried this often before it is taken as someone else's. */
const UNKNOWN_COMMAND_DELIVERIES = 5
const UNKNOWN_COMMAND_RETRY_MS = 1000

const codec = JSONCodec<StatusEvent>()

/** The consumer's name for a namespace: JetStream names allow no dots, wildcards or spaces (namespaces have none). */
export function runnerEventsDurable(namespace: string): string {
  return `ffkube-operator-${namespace}`
}

export class RunnerEvents {
  private messages: ConsumerMessages | undefined
  private loop: Promise<void> | undefined

  constructor(private readonly o: RunnerEventsOptions) {}

  /**
   * Creates the status stream and the durable consumer when missing, then
   * consumes until stop(). Runners only publish (they create no stream), so
   * the operator, which also publishes FAILED on a runner's behalf, ensures
   * the stream itself rather than depend on the worker having started first.
   */
  async start(): Promise<void> {
    await ensureStream(this.o.nats, STATUS_STREAM_DEFINITION)
    const jsm = await this.o.nats.jetstreamManager()
    try {
      await jsm.consumers.info(STATUS_STREAM, this.o.durableName)
    } catch {
      // Adding a durable with the same config is idempotent, so two replicas racing here both succeed.
      await jsm.consumers.add(STATUS_STREAM, {
        durable_name: this.o.durableName,
        filter_subject: `${STATUS_SUBJECT_PREFIX}.>`,
        ack_policy: AckPolicy.Explicit,
        // A first start catches up with the last event of every command, not the whole history.
        deliver_policy: DeliverPolicy.LastPerSubject,
        ack_wait: 30_000_000_000,
        max_ack_pending: 256,
      })
    }
    const consumer = await this.o.nats.jetstream().consumers.get(STATUS_STREAM, this.o.durableName)
    this.messages = await consumer.consume({ max_messages: 128 })
    this.o.logger.info({ stream: STATUS_STREAM, durable: this.o.durableName }, 'following the runner status stream')
    this.loop = this.run(this.messages)
  }

  /** Stops taking events; those taken and not yet settled stay unacknowledged in RunnerReports. */
  async stop(): Promise<void> {
    this.messages?.stop()
    await this.loop
  }

  private async run(messages: ConsumerMessages): Promise<void> {
    for await (const message of messages) this.take(message)
  }

  private take(message: JsMsg): void {
    let event: StatusEvent
    try {
      event = codec.decode(message.data)
      if (typeof event.command_id !== 'string' || typeof event.type !== 'string') throw new Error('not a status event')
    } catch {
      // Nothing can ever apply it: terminate it so it does not come back.
      message.term()
      return
    }
    const key = this.o.keyOf(event.command_id)
    this.o.logger.debug({ command_id: event.command_id, type: event.type, known: key !== undefined, deliveries: message.info.redeliveryCount }, 'runner event')
    if (!key) {
      // The watch may not have brought the CR yet; after a few tries it is a command this namespace does not run.
      if (message.info.redeliveryCount < UNKNOWN_COMMAND_DELIVERIES) message.nak(UNKNOWN_COMMAND_RETRY_MS)
      else message.ack()
      return
    }
    this.o.reports.add(key, event, message)
    this.o.enqueue(key)
  }
}
