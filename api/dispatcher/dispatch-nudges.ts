/**
 * Nudges from an API process to the dispatcher of a worker process, over core
 * NATS (not JetStream): the chart runs the api and worker roles in separate
 * pods, where the dispatcher otherwise finds accepted work only at its next
 * poll (1 s; 0.3 s of the median submit → SUCCESS on the real node). A lost
 * nudge costs exactly that poll and nothing else: the record in MongoDB is the
 * hand-off, the nudge only says "look now".
 */
import type { NatsConnection, Subscription } from 'nats'

export const DISPATCH_NUDGE_SUBJECT = 'ffkube.nudge.dispatch'

/** Tells every worker's dispatcher that commands were just accepted. The message is empty: which ones is the dispatcher's to find, in turn order. */
export function publishDispatchNudge(nats: NatsConnection): void {
  // A closed or reconnecting connection drops it: the poll still finds the work.
  try {
    nats.publish(DISPATCH_NUDGE_SUBJECT)
  } catch {
    // See above: never fail an accepted request over a nudge.
  }
}

/** Calls `nudge` for every nudge published; unsubscribe to stop. */
export function subscribeDispatchNudges(nats: NatsConnection, nudge: () => void): Subscription {
  // Whatever a message holds, it means "look".
  return nats.subscribe(DISPATCH_NUDGE_SUBJECT, { callback: (err) => err || nudge() })
}
