/**
 * Publishes one status event to FFKUBE_STATUS the one way every program does:
 * on the command's subject, with Nats-Msg-Id = event_id (so the stream drops a
 * re-sent copy), retried with a growing delay before giving up. The runner's
 * reporter, the local executor's relay of warm runners' events, and the
 * failures the executor and the operator report on a runner's behalf all
 * publish through here.
 */
import { JSONCodec, type JetStreamClient } from 'nats'
import type { Logger } from 'pino'
import { statusSubject, type StatusEvent } from './status-events.js'

export interface PublishOptions {
  logger: Pick<Logger, 'warn' | 'error'>
  /** Tries in all; default 6 (about 11 s of waiting in all). */
  attempts?: number | undefined
  sleep?: ((ms: number) => Promise<void>) | undefined
}

const DEFAULT_ATTEMPTS = 6
const codec = JSONCodec<StatusEvent>()
const realSleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

/** The wait before try `attempt + 1`: 400 ms, doubling, at most 5 s. Pure. */
export function publishRetryDelayMs(attempt: number): number {
  return Math.min(200 * 2 ** attempt, 5000)
}

/**
 * Resolves once the stream stored the event (or dropped it as a duplicate);
 * throws the last error when every try failed. A progress event may be lost,
 * a terminal one must not, hence the retries.
 */
export async function publishStatusEvent(js: JetStreamClient, event: StatusEvent, options: PublishOptions): Promise<void> {
  const attempts = options.attempts ?? DEFAULT_ATTEMPTS
  const sleep = options.sleep ?? realSleep
  for (let attempt = 1; ; attempt++) {
    try {
      await js.publish(statusSubject(event.command_id), codec.encode(event), { msgID: event.event_id })
      return
    } catch (err) {
      if (attempt >= attempts) {
        options.logger.error({ err, command_id: event.command_id, event_id: event.event_id }, 'status event not published: gave up')
        throw err
      }
      options.logger.warn({ err, command_id: event.command_id, attempt }, 'status publish failed, retrying')
      await sleep(publishRetryDelayMs(attempt))
    }
  }
}
