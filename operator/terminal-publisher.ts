/**
 * Publishes the terminal event of a command the operator ended because the
 * runner could not (killed, evicted, never started, Job gone). It is the
 * runner's own FAILED status event (contracts/status-events.ts) on the same
 * subject with the same Nats-Msg-Id (`<command_id>:FAILED`): if the runner did
 * report its failure, JetStream drops ours as a duplicate and the runner's more
 * precise reason stands; a republish after a retried reconcile is dropped too.
 */
import type { NatsConnection } from 'nats'
import { JSONCodec } from 'nats'
import { statusEventId, statusSubject, type FailedEvent } from '../contracts/status-events.js'

export interface TerminalFailure {
  commandId: string
  errorStatus: string
  errorMessage: string
  /** ISO 8601 */
  at: string
}

export interface TerminalPublisher {
  publish(failure: TerminalFailure): Promise<void>
}

/** Used when NATS_URL is unset (tests of the Kubernetes side only): the CR status still records the failure. */
export const noPublisher: TerminalPublisher = { publish: async () => {} }

/** The FAILED status event for an operator-detected failure. Pure. */
export function failedEvent(f: TerminalFailure): FailedEvent {
  const body = { type: 'FAILED' as const, error_status: f.errorStatus, error_message: f.errorMessage, ffmpeg_command_run_seconds: null, failed_files: null }
  return { command_id: f.commandId, event_id: statusEventId(f.commandId, body), emitted_at: f.at, ...body }
}

const codec = JSONCodec<FailedEvent>()

/** JetStream publish; throws when no stream takes the subject, so the reconcile retries rather than losing it. */
export function natsPublisher(nc: NatsConnection): TerminalPublisher {
  const js = nc.jetstream()
  return {
    async publish(failure) {
      const event = failedEvent(failure)
      await js.publish(statusSubject(event.command_id), codec.encode(event), { msgID: event.event_id })
    },
  }
}
