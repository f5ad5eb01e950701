/**
 * The two JetStream streams ffkube's programs share, defined once: runners'
 * status events (FFKUBE_STATUS) and the projector's completion events
 * (FFKUBE_COMPLETIONS). Whichever program starts first creates a stream, with
 * these settings; a stream that exists is left as it is (an operator of the
 * cluster may have tuned it).
 */
import { AckPolicy, DeliverPolicy, DiscardPolicy, RetentionPolicy, StorageType, type NatsConnection, type StreamConfig } from 'nats'
import { COMPLETION_STREAM, COMPLETION_SUBJECT_PREFIX } from './completion-events.js'
import { STATUS_STREAM, STATUS_SUBJECT_PREFIX } from './status-events.js'
import { LOG_STREAM, LOG_SUBJECT_PREFIX } from './log-chunks.js'

/** What a stream is created with. */
export type StreamDefinition = Readonly<
  Pick<StreamConfig, 'name' | 'subjects' | 'retention' | 'storage' | 'duplicate_window' | 'max_age' | 'max_msgs' | 'max_bytes' | 'discard'>
>

const SECOND_NS = 1_000_000_000

/**
 * No limits: every event is kept. Messages are small and the consumers are
 * durable, so a consumer that was down for a while still finds what it missed.
 */
const KEEP_EVERYTHING = { retention: RetentionPolicy.Limits, max_age: 0, max_msgs: -1, max_bytes: -1, discard: DiscardPolicy.Old } as const

/**
 * FFKUBE_STATUS: two minutes of de-duplication covers a runner (or a whole
 * pod) restarting and re-sending its events with the same Nats-Msg-Id.
 */
export const STATUS_STREAM_DEFINITION: StreamDefinition = {
  name: STATUS_STREAM,
  subjects: [`${STATUS_SUBJECT_PREFIX}.>`],
  storage: StorageType.File,
  duplicate_window: 120 * SECOND_NS,
  ...KEEP_EVERYTHING,
}

/**
 * FFKUBE_COMPLETIONS: ten minutes, to cover a projector restart between its
 * MongoDB write and its acknowledgement (it publishes again, and the stream
 * drops the copy).
 */
export const COMPLETION_STREAM_DEFINITION: StreamDefinition = {
  name: COMPLETION_STREAM,
  subjects: [`${COMPLETION_SUBJECT_PREFIX}.>`],
  storage: StorageType.File,
  duplicate_window: 600 * SECOND_NS,
  ...KEEP_EVERYTHING,
}

/**
 * FFKUBE_LOGS: tools' stderr in chunks. The log projector folds them into
 * MongoDB (the record of the log, kept with the command), so the stream only
 * needs to hold them until then: a day, and 1 GiB at most (oldest dropped).
 */
export const LOG_STREAM_DEFINITION: StreamDefinition = {
  name: LOG_STREAM,
  subjects: [`${LOG_SUBJECT_PREFIX}.>`],
  storage: StorageType.File,
  duplicate_window: 120 * SECOND_NS,
  retention: RetentionPolicy.Limits,
  max_age: 24 * 3600 * SECOND_NS,
  max_msgs: -1,
  max_bytes: 1024 ** 3,
  discard: DiscardPolicy.Old,
}

/** Creates the stream when it does not exist yet; idempotent, and safe when several processes race to create it. */
export async function ensureStream(nats: NatsConnection, definition: StreamDefinition): Promise<void> {
  const jsm = await nats.jetstreamManager()
  try {
    await jsm.streams.info(definition.name)
    return
  } catch {
    // Missing (or unreadable for a moment): try to create it.
  }
  try {
    await jsm.streams.add({ ...definition, subjects: [...definition.subjects] })
  } catch (err) {
    // Another process created it in between: fine. Anything else is the add's error.
    await jsm.streams.info(definition.name).catch(() => {
      throw err
    })
  }
}

/**
 * The durable pull consumer `durable` of `stream`, created when missing: explicit
 * acks, from the stream's first message, `ackWaitMs` (30 s) to ack before a
 * redelivery. An existing one is kept as it is, so a restart resumes where it
 * stopped; one another replica created in between is fine.
 */
export async function ensureDurableConsumer(nats: NatsConnection, stream: string, durable: string, maxAckPending = 512, ackWaitMs = 30_000): Promise<void> {
  const jsm = await nats.jetstreamManager()
  try {
    await jsm.consumers.info(stream, durable)
    return
  } catch {
    // Missing: create it.
  }
  const config = { durable_name: durable, ack_policy: AckPolicy.Explicit, deliver_policy: DeliverPolicy.All, ack_wait: ackWaitMs * 1_000_000, max_ack_pending: maxAckPending }
  await jsm.consumers.add(stream, config).catch(async (err: unknown) => {
    await jsm.consumers.info(stream, durable).catch(() => {
      throw err
    })
  })
}
