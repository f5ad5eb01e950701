/**
 * The two JetStream streams the API side owns: runners' status events
 * (FFKUBE_STATUS) and the projector's completion events (FFKUBE_COMPLETIONS).
 * Both are created when missing, on file storage, with a de-duplication
 * window so a re-sent event (same Nats-Msg-Id) is dropped by the server.
 */
import { JSONCodec, RetentionPolicy, StorageType, type JetStreamClient, type NatsConnection } from 'nats'
import { COMPLETION_STREAM, COMPLETION_SUBJECT_PREFIX } from '../../contracts/completion-events.js'
import { STATUS_STREAM, STATUS_SUBJECT_PREFIX, statusEventId, statusSubject, type FailedEvent } from '../../contracts/status-events.js'

const codec = JSONCodec()
const SECOND_NS = 1_000_000_000

async function ensureStream(nc: NatsConnection, name: string, subject: string, duplicateWindowSeconds: number): Promise<void> {
  const jsm = await nc.jetstreamManager()
  try {
    await jsm.streams.info(name)
  } catch {
    try {
      await jsm.streams.add({
        name,
        subjects: [subject],
        retention: RetentionPolicy.Limits,
        storage: StorageType.File,
        duplicate_window: duplicateWindowSeconds * SECOND_NS,
      })
    } catch (err) {
      // Another process (a runner, the webhook deliverer) created it in between: fine.
      await jsm.streams.info(name).catch(() => {
        throw err
      })
    }
  }
}

/** FFKUBE_STATUS: two minutes of de-duplication, as the runner's own ensure uses. */
export function ensureStatusStream(nc: NatsConnection): Promise<void> {
  return ensureStream(nc, STATUS_STREAM, `${STATUS_SUBJECT_PREFIX}.>`, 120)
}

/** FFKUBE_COMPLETIONS: ten minutes, to cover a projector restart between its write and its ack. */
export function ensureCompletionStream(nc: NatsConnection): Promise<void> {
  return ensureStream(nc, COMPLETION_STREAM, `${COMPLETION_SUBJECT_PREFIX}.>`, 600)
}

/**
 * Fails a command on the runner's behalf (it crashed, timed out, or died with
 * its parent). Published as the runner's own FAILED event would be, with the
 * same Nats-Msg-Id, so the projector stays the record's only writer and a
 * runner that did report first wins.
 */
export async function publishFailure(js: JetStreamClient, commandId: string, errorStatus: string, errorMessage: string, now: Date): Promise<void> {
  const body = { type: 'FAILED' as const, error_status: errorStatus, error_message: errorMessage, ffmpeg_command_run_seconds: null, failed_files: null }
  const event: FailedEvent = { ...body, command_id: commandId, event_id: statusEventId(commandId, body), emitted_at: now.toISOString() }
  await js.publish(statusSubject(commandId), codec.encode(event), { msgID: event.event_id })
}
