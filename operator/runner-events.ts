/**
 * The runner's status events (contracts/status-events.ts) flowing into the
 * MediaCommand's status: progress while it runs, the outputs once it
 * succeeded, and the runner's own failure reason. The phase stays the Job's to
 * decide (reconciler.ts); these fields only add detail, and only move forward.
 *
 * The stream is read through a durable consumer with explicit acks: an event
 * is acknowledged only once the CR shows it (or it can never apply), so an
 * operator restart, a failover to another replica or a failed status write
 * redelivers it instead of losing it. Applying an event twice changes nothing.
 */
import { isDeepStrictEqual } from 'node:util'
import { CustomObjectsApi, PatchStrategy, setHeaderOptions, type KubeConfig } from '@kubernetes/client-node'
import { AckPolicy, DeliverPolicy, JSONCodec, type ConsumerMessages, type JsMsg, type NatsConnection } from 'nats'
import type { Logger } from 'pino'
import {
  MEDIA_COMMAND_GROUP,
  MEDIA_COMMAND_PLURAL,
  MEDIA_COMMAND_VERSION,
  type MediaCommand,
  type MediaCommandStatus,
} from '../contracts/media-command.js'
import { STATUS_STREAM, STATUS_SUBJECT_PREFIX, type StatusEvent } from '../contracts/status-events.js'
import { describeError, isConflict, isNotFound } from './kube-errors.js'

const BYTES_PER_MB = 1024 * 1024

/** The status fields an event changes, or undefined when it changes nothing. Pure. */
export function statusFromRunnerEvent(status: MediaCommandStatus, event: StatusEvent): Partial<MediaCommandStatus> | undefined {
  const next: Partial<MediaCommandStatus> = {}
  if (event.type === 'PROCESSING' && event.progress !== null && status.phase !== 'SUCCESS' && status.phase !== 'FAILED') {
    const progress = Math.floor(Math.min(100, Math.max(0, event.progress)))
    if (progress > (status.progress ?? 0)) next.progress = progress
  }
  if (event.type === 'SUCCESS') {
    const outputs = Object.entries(event.output_files).sort(([a], [b]) => a.localeCompare(b)).map(([alias, file]) => ({
      alias, filename: file.filename, ...(file.size_mbytes === null ? {} : { sizeBytes: Math.round(file.size_mbytes * BYTES_PER_MB) }),
    }))
    if (!isDeepStrictEqual(status.outputs, outputs)) next.outputs = outputs
    if (status.progress !== 100) next.progress = 100
  }
  if (event.type === 'FAILED' && !status.runnerErrorStatus) {
    // Kept apart from errorStatus, which the reconciler derives from the Job; status.ts prefers it.
    next.runnerErrorStatus = event.error_status
    next.runnerErrorMessage = event.error_message.slice(0, 2048)
  }
  return Object.keys(next).length > 0 ? next : undefined
}

export interface RunnerEventsOptions {
  nats: NatsConnection
  kubeConfig: KubeConfig
  /** The MediaCommand of a command id in the watched namespace, from the informer's cache. */
  lookup: (commandId: string) => MediaCommand | undefined
  /** The durable consumer's name: one per watched namespace, shared by its replicas, so a new leader resumes where the old one stopped. */
  durableName: string
  logger: Logger
}

/** An event for a command not (yet) in the cache is retried this often before it is taken as someone else's. */
const UNKNOWN_COMMAND_DELIVERIES = 5
const RETRY_DELAY_MS = 1000
/** Stale-cache conflicts are settled by re-reading the object; after this many, the event is redelivered later. */
const CONFLICT_ATTEMPTS = 3

const codec = JSONCodec<StatusEvent>()
const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch)
const crApi = { group: MEDIA_COMMAND_GROUP, version: MEDIA_COMMAND_VERSION, plural: MEDIA_COMMAND_PLURAL }

/** The consumer's name for a namespace: JetStream names allow no dots, wildcards or spaces (namespaces have none). */
export function runnerEventsDurable(namespace: string): string {
  return `ffkube-operator-${namespace}`
}

/** What became of one event: acknowledged (applied, or never applicable), or to be redelivered. */
type Applied = 'ack' | 'retry'

/**
 * Consumes the status stream and merge-patches the status subresource, one
 * event at a time in stream order (so one command's events never race).
 */
export class RunnerEvents {
  private messages: ConsumerMessages | undefined
  private loop: Promise<void> | undefined
  private readonly api: CustomObjectsApi

  constructor(private readonly o: RunnerEventsOptions) {
    this.api = o.kubeConfig.makeApiClient(CustomObjectsApi)
  }

  /** Creates the durable consumer when missing, then consumes until stop(). */
  async start(): Promise<void> {
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

  /** Stops taking events after the one in hand; unacknowledged ones go to the next consumer start. */
  async stop(): Promise<void> {
    this.messages?.stop()
    await this.loop
  }

  private async run(messages: ConsumerMessages): Promise<void> {
    for await (const message of messages) {
      let event: StatusEvent
      try {
        event = codec.decode(message.data)
        if (typeof event.command_id !== 'string' || typeof event.type !== 'string') throw new Error('not a status event')
      } catch {
        // Nothing can ever apply it: terminate it so it does not come back.
        message.term()
        continue
      }
      const applied = await this.apply(event, message)
      if (applied === 'ack') message.ack()
      else message.nak(RETRY_DELAY_MS)
    }
  }

  private async apply(event: StatusEvent, message: JsMsg): Promise<Applied> {
    const log = this.o.logger.child({ command_id: event.command_id })
    let mc = this.o.lookup(event.command_id)
    log.debug({ type: event.type, known: mc !== undefined, deliveries: message.info.redeliveryCount }, 'runner event')
    if (!mc) {
      // The watch may not have brought the CR yet; after a few tries it is a command this namespace does not run.
      return message.info.redeliveryCount < UNKNOWN_COMMAND_DELIVERIES ? 'retry' : 'ack'
    }
    for (let attempt = 1; attempt <= CONFLICT_ATTEMPTS; attempt++) {
      const patch = statusFromRunnerEvent(mc.status ?? {}, event)
      if (!patch) return 'ack'
      try {
        // The resourceVersion makes the patch conditional: computed from a stale copy, it fails (409) instead of moving a field back.
        await this.api.patchNamespacedCustomObjectStatus(
          { ...crApi, namespace: mc.metadata.namespace!, name: mc.metadata.name, body: { metadata: { resourceVersion: mc.metadata.resourceVersion }, status: patch } },
          mergePatch,
        )
        return 'ack'
      } catch (err) {
        if (isNotFound(err)) return 'ack'
        if (!isConflict(err)) {
          log.warn({ err: describeError(err) }, 'could not apply a runner event to the CR status; it will be redelivered')
          return 'retry'
        }
      }
      try {
        mc = (await this.api.getNamespacedCustomObject({ ...crApi, namespace: mc.metadata.namespace!, name: mc.metadata.name })) as MediaCommand
      } catch (err) {
        if (isNotFound(err)) return 'ack'
        return 'retry'
      }
    }
    return 'retry'
  }
}
