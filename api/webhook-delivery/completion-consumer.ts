import { AckPolicy, DeliverPolicy, JSONCodec, type Consumer, type NatsConnection } from 'nats'
import { COMPLETION_STREAM, COMPLETION_SUBJECT_PREFIX, type CompletionEvent } from '../../contracts/completion-events.js'
import { COMPLETION_STREAM_DEFINITION, ensureStream } from '../../contracts/nats-streams.js'

/** The durable consumer every deliverer replica shares: JetStream hands each event to one of them. */
export const DELIVERER_CONSUMER = 'ffkube-webhook-deliverer'

export const completionCodec = JSONCodec<CompletionEvent>()

/**
 * The durable pull consumer. `ackWaitMs` must exceed one attempt (the HTTP
 * timeout plus the database writes): an event not acknowledged in time goes
 * to another replica, whose claim then finds the attempt taken.
 */
export async function completionConsumer(nc: NatsConnection, name: string, ackWaitMs: number): Promise<Consumer> {
  // The deliverer may start before the projector that publishes: it creates the stream too.
  await ensureStream(nc, COMPLETION_STREAM_DEFINITION)
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
