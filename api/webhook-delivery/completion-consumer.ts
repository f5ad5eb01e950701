import { AckPolicy, DeliverPolicy, JSONCodec, RetentionPolicy, StorageType, type Consumer, type NatsConnection } from 'nats'
import { COMPLETION_STREAM, COMPLETION_SUBJECT_PREFIX, type CompletionEvent } from '../../contracts/completion-events.js'

/** The durable consumer every deliverer replica shares: JetStream hands each event to one of them. */
export const DELIVERER_CONSUMER = 'ffkube-webhook-deliverer'

const SECOND_NS = 1_000_000_000
export const completionCodec = JSONCodec<CompletionEvent>()

/**
 * Creates FFKUBE_COMPLETIONS when missing, with the projector's settings
 * (file storage, ten-minute de-duplication window), so the deliverer can
 * start first. A stream that exists is left as it is.
 */
export async function ensureCompletionStream(nc: NatsConnection): Promise<void> {
  const jsm = await nc.jetstreamManager()
  try {
    await jsm.streams.info(COMPLETION_STREAM)
  } catch {
    try {
      await jsm.streams.add({
        name: COMPLETION_STREAM,
        subjects: [`${COMPLETION_SUBJECT_PREFIX}.>`],
        retention: RetentionPolicy.Limits,
        storage: StorageType.File,
        duplicate_window: 600 * SECOND_NS,
      })
    } catch (error) {
      // Another process created it in between: fine.
      await jsm.streams.info(COMPLETION_STREAM).catch(() => {
        throw error
      })
    }
  }
}

/**
 * The durable pull consumer. `ackWaitMs` must exceed one attempt (the HTTP
 * timeout plus the database writes): an event not acknowledged in time goes
 * to another replica, whose claim then finds the attempt taken.
 */
export async function completionConsumer(nc: NatsConnection, name: string, ackWaitMs: number): Promise<Consumer> {
  await ensureCompletionStream(nc)
  const jsm = await nc.jetstreamManager()
  try {
    await jsm.consumers.info(COMPLETION_STREAM, name)
  } catch {
    try {
      await jsm.consumers.add(COMPLETION_STREAM, {
        durable_name: name,
        ack_policy: AckPolicy.Explicit,
        deliver_policy: DeliverPolicy.All,
        ack_wait: ackWaitMs * 1_000_000,
        filter_subject: `${COMPLETION_SUBJECT_PREFIX}.>`,
        max_ack_pending: 10_000,
      })
    } catch (error) {
      await jsm.consumers.info(COMPLETION_STREAM, name).catch(() => {
        throw error
      })
    }
  }
  return nc.jetstream().consumers.get(COMPLETION_STREAM, name)
}
