/**
 * Publishes the terminal event of a command the operator ended because the
 * runner could not (killed, evicted, never started, Job gone): the runner's
 * own FAILED event (contracts/status-events.ts `failedEvent`), with its
 * Nats-Msg-Id, so the runner's own report, when it made one, stands.
 */
import type { NatsConnection } from 'nats'
import type { Logger } from 'pino'
import { failedEvent, type FailureOnRunnersBehalf } from '../contracts/status-events.js'
import { publishStatusEvent } from '../contracts/status-publisher.js'

export interface TerminalPublisher {
  publish(failure: FailureOnRunnersBehalf): Promise<void>
}

/** Used when NATS_URL is unset (tests of the Kubernetes side only): the CR status still records the failure. */
export const noPublisher: TerminalPublisher = { publish: async () => {} }

/** JetStream publish with the shared retries; throws when they run out, so the reconcile retries rather than losing it. */
export function natsPublisher(nc: NatsConnection, logger: Logger): TerminalPublisher {
  const js = nc.jetstream()
  return { publish: (failure) => publishStatusEvent(js, failedEvent(failure), { logger }) }
}
