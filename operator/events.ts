/**
 * Kubernetes Events (events.k8s.io/v1) on a MediaCommand's failures only: a
 * failure, a cancel, a time limit, a pod retried. The path every command takes
 * (Job created, succeeded) records none: its status conditions carry it, and
 * each Event is an etcd write and an object for the API server to expire.
 * Each transition's Event has a deterministic name (`<command_id>.<reason>`),
 * so a second reconcile, a restarted operator or a second replica creating it
 * again gets AlreadyExists and nothing is recorded twice.
 */
import { V1MicroTime, type EventsV1Api } from '@kubernetes/client-node'
import type { Logger } from 'pino'
import { MEDIA_COMMAND_API_VERSION, MEDIA_COMMAND_KIND, type MediaCommand } from '../contracts/media-command.js'
import { describeError, isConflict } from './kube-errors.js'

export const REPORTING_CONTROLLER = 'ffkube.io/operator'

export interface Transition {
  reason: 'Failed' | 'Cancelled' | 'TimedOut' | 'PodRetried'
  type: 'Warning'
  note: string
  /** What the operator did (events.k8s.io's `action`). */
  action: string
  /** When it happened, when not now: an Event recorded again later keeps its time. */
  at?: Date | undefined
}

export class EventRecorder {
  constructor(
    private readonly api: EventsV1Api,
    private readonly identity: string,
    private readonly logger: Logger,
    private readonly clock: () => Date = () => new Date(),
  ) {}

  /** Records one transition; a failure is logged, never retried (an Event is a courtesy, status is the record). */
  async record(mc: MediaCommand, t: Transition): Promise<void> {
    const namespace = mc.metadata.namespace ?? 'default'
    try {
      await this.api.createNamespacedEvent({
        namespace,
        body: {
          metadata: { name: `${mc.metadata.name}.${t.reason.toLowerCase()}`, namespace },
          eventTime: new V1MicroTime((t.at ?? this.clock()).getTime()),
          reportingController: REPORTING_CONTROLLER,
          reportingInstance: this.identity.slice(0, 128),
          action: t.action,
          reason: t.reason,
          type: t.type,
          note: t.note.slice(0, 1024),
          regarding: {
            apiVersion: MEDIA_COMMAND_API_VERSION,
            kind: MEDIA_COMMAND_KIND,
            name: mc.metadata.name,
            namespace,
            uid: mc.metadata.uid,
          },
        },
      })
    } catch (err) {
      if (isConflict(err)) return
      this.logger.warn({ command_id: mc.metadata.name, reason: t.reason, err: describeError(err) }, 'could not record event')
    }
  }
}
