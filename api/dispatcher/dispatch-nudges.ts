/**
 * Nudges from an API process to the dispatcher of a worker process, over core
 * NATS (not JetStream): the chart runs the api and worker roles in separate
 * pods, where the dispatcher otherwise finds accepted work only at its next
 * poll (1 s; 0.3 s of the median submit → SUCCESS on the real node). A lost
 * nudge costs exactly that poll and nothing else: the record in MongoDB is the
 * hand-off, the nudge only says "look now".
 */
import { JSONCodec, type NatsConnection, type Subscription } from 'nats'

export const DISPATCH_NUDGE_SUBJECT = 'ffkube.nudge.dispatch'

/** The ids of the commands just accepted; an empty list means "look anyway". */
interface DispatchNudge {
  command_ids: string[]
}

const codec = JSONCodec<DispatchNudge>()

/** Tells every worker's dispatcher that these commands were just accepted. */
export function publishDispatchNudge(nats: NatsConnection, commandIds: readonly string[]): void {
  // A closed or reconnecting connection drops it: the poll still finds the work.
  try {
    nats.publish(DISPATCH_NUDGE_SUBJECT, codec.encode({ command_ids: [...commandIds] }))
  } catch {
    // See above: never fail an accepted request over a nudge.
  }
}

/** Calls `nudge` for every nudge published; unsubscribe to stop. */
export function subscribeDispatchNudges(nats: NatsConnection, nudge: (commandIds: readonly string[]) => void): Subscription {
  return nats.subscribe(DISPATCH_NUDGE_SUBJECT, {
    callback: (err, msg) => {
      if (err) return
      let ids: string[] = []
      try {
        const body = codec.decode(msg.data)
        if (Array.isArray(body.command_ids)) ids = body.command_ids.filter((id): id is string => typeof id === 'string')
      } catch {
        // A malformed nudge still means "look".
      }
      nudge(ids)
    },
  })
}
