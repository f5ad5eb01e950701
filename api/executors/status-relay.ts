/**
 * Publishes the status events local runners hand to this process (the warm
 * pool's workers write them to stdout) to FFKUBE_STATUS, exactly as a runner
 * with its own connection would: subject per command, Nats-Msg-Id = event_id,
 * so a re-sent event is dropped by the stream. Retries like the runner's
 * NatsReporter before giving up.
 */
import { JSONCodec, type JetStreamClient } from 'nats'
import { statusSubject } from '../../contracts/status-events.js'
import { systemSleep, type Sleep } from '../clock.js'
import type { Logger } from '../logger.js'
import type { StatusPublisher } from './runner-pool.js'

const codec = JSONCodec()
const NEVER_ABORTED = new AbortController().signal

export function statusRelay(js: JetStreamClient, log: Logger, options: { attempts?: number; sleep?: Sleep } = {}): StatusPublisher {
  const attempts = options.attempts ?? 6
  const sleep = options.sleep ?? systemSleep
  return async (event) => {
    for (let attempt = 1; ; attempt++) {
      try {
        await js.publish(statusSubject(event.command_id), codec.encode(event), { msgID: event.event_id })
        return
      } catch (err) {
        if (attempt >= attempts) {
          log.error({ err, command_id: event.command_id, event_id: event.event_id }, 'status event not published: gave up')
          throw err
        }
        log.warn({ err, command_id: event.command_id, attempt }, 'status publish failed, retrying')
        await sleep(Math.min(200 * 2 ** attempt, 5000), NEVER_ABORTED)
      }
    }
  }
}
