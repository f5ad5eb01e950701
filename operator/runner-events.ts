/**
 * The runner's status events (contracts/status-events.ts) flowing into the
 * MediaCommand's status: progress while it runs, the outputs once it
 * succeeded, and the runner's own failure reason. The phase stays the Job's to
 * decide (reconciler.ts); these fields only add detail, and only move forward.
 */
import { isDeepStrictEqual } from 'node:util'
import { CustomObjectsApi, PatchStrategy, setHeaderOptions, type KubeConfig } from '@kubernetes/client-node'
import { DeliverPolicy, JSONCodec, type ConsumerMessages, type NatsConnection } from 'nats'
import type { Logger } from 'pino'
import {
  MEDIA_COMMAND_GROUP,
  MEDIA_COMMAND_PLURAL,
  MEDIA_COMMAND_VERSION,
  type MediaCommand,
  type MediaCommandStatus,
} from '../contracts/media-command.js'
import { STATUS_STREAM, STATUS_SUBJECT_PREFIX, type StatusEvent } from '../contracts/status-events.js'
import { describeError, isNotFound } from './kube-errors.js'

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
  logger: Logger
}

const codec = JSONCodec<StatusEvent>()
const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch)

/**
 * Reads the status stream with an ordered consumer starting at the last event of
 * every command (so a restart re-applies what it missed; applying twice changes
 * nothing) and merge-patches the status subresource.
 */
export class RunnerEvents {
  private messages: ConsumerMessages | undefined
  private loop: Promise<void> | undefined
  private readonly api: CustomObjectsApi

  constructor(private readonly o: RunnerEventsOptions) {
    this.api = o.kubeConfig.makeApiClient(CustomObjectsApi)
  }

  async start(): Promise<void> {
    const js = this.o.nats.jetstream()
    const consumer = await js.consumers.get(STATUS_STREAM, {
      filterSubjects: `${STATUS_SUBJECT_PREFIX}.>`,
      deliver_policy: DeliverPolicy.LastPerSubject,
    })
    this.messages = await consumer.consume()
    this.o.logger.info({ stream: STATUS_STREAM }, 'following the runner status stream')
    this.loop = this.run(this.messages)
  }

  async stop(): Promise<void> {
    await this.messages?.close()
    await this.loop
  }

  private async run(messages: ConsumerMessages): Promise<void> {
    for await (const message of messages) {
      let event: StatusEvent
      try {
        event = codec.decode(message.data)
      } catch {
        continue
      }
      await this.apply(event)
    }
  }

  /** Best effort: a lost progress update is replaced by the next; outputs and reasons come back on a restart. */
  private async apply(event: StatusEvent): Promise<void> {
    const mc = this.o.lookup(event.command_id)
    this.o.logger.debug({ command_id: event.command_id, type: event.type, known: mc !== undefined }, 'runner event')
    if (!mc) return
    const patch = statusFromRunnerEvent(mc.status ?? {}, event)
    if (!patch) return
    try {
      await this.api.patchNamespacedCustomObjectStatus(
        { group: MEDIA_COMMAND_GROUP, version: MEDIA_COMMAND_VERSION, plural: MEDIA_COMMAND_PLURAL, namespace: mc.metadata.namespace!, name: mc.metadata.name, body: { status: patch } },
        mergePatch,
      )
    } catch (err) {
      if (isNotFound(err)) return
      this.o.logger.warn({ command_id: event.command_id, err: describeError(err) }, 'could not apply a runner event to the CR status')
    }
  }
}
