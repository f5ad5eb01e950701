/**
 * What a finished MediaCommand needs besides its status, level-triggered.
 * The reconciler writes the terminal status first and then settles the
 * command here:
 *   1. a FAILED is announced on the runner's behalf (terminal-publisher.ts);
 *   2. a cancelled command's Job and pods are deleted, and so is the Job of a
 *      pod whose image cannot be pulled or whose run container never started
 *      in three pods (its podFailurePolicy would make pods for ever);
 *   3. a failure's Warning Event is recorded (a success records none: its
 *      status conditions say it, and an Event is one more etcd write a command).
 * The status is the record of what is due: every reconcile of a finished
 * command settles it again until this process has seen the three through, so
 * an operator that dies between any two steps (or a new leader) does them
 * again. Each is safe to repeat: the FAILED event keeps its Nats-Msg-Id (the
 * stream drops a copy inside its de-duplication window, and the projector
 * ignores one after it: a finished record never moves), a deleted object is
 * a 404, and an Event has a fixed name (AlreadyExists).
 */
import type { BatchV1Api, CoreV1Api } from '@kubernetes/client-node'
import type { Logger } from 'pino'
import { LABEL_COMMAND_ID, OPERATOR_FAILURES, type MediaCommand } from '../contracts/media-command.js'
import type { FailureOnRunnersBehalf } from '../contracts/status-events.js'
import { findJob, ownedBy, type Caches } from './caches.js'
import type { EventRecorder, Transition } from './events.js'
import { isConflict, isNotFound } from './kube-errors.js'
import { START_ATTEMPTS } from './run-container-start.js'
import type { TerminalPublisher } from './terminal-publisher.js'

/** What settling one finished MediaCommand does. */
export interface FinishedEffects {
  /** The FAILED event to publish on the runner's behalf; undefined for a SUCCESS. */
  failure: FailureOnRunnersBehalf | undefined
  /** Its Job goes now, not at its deadline or TTL: the command was cancelled, or its pod can never start. */
  deleteJob: boolean
  /** A cancel stops the work now: the pods go too, not when the garbage collector gets to them. */
  deletePods: boolean
  /** The Warning Event of a failure; undefined for a SUCCESS. */
  event: Transition | undefined
}

/** The effects of a finished MediaCommand, from its status alone. Pure. */
export function finishedEffects(mc: MediaCommand, now: Date): FinishedEffects {
  const status = mc.status ?? {}
  const at = status.completionTime ? new Date(status.completionTime) : now
  if (status.phase !== 'FAILED') return { failure: undefined, deleteJob: false, deletePods: false, event: undefined }
  const errorStatus = status.errorStatus ?? 'INTERNAL_ERROR'
  const errorMessage = status.errorMessage ?? ''
  const cancelled = errorStatus === OPERATOR_FAILURES.CANCELLED
  // A Job whose pods cannot start would otherwise linger: an image that cannot be pulled until
  // its deadline, a run container that never starts for ever (its podFailurePolicy retries those).
  const cannotStart = errorStatus === OPERATOR_FAILURES.IMAGE_PULL_ERROR || (status.neverStartedPods?.length ?? 0) >= START_ATTEMPTS
  return {
    failure: { commandId: mc.metadata.name, errorStatus, errorMessage, at },
    deleteJob: cancelled || cannotStart,
    deletePods: cancelled,
    event: { ...failureEvent(errorStatus), type: 'Warning', note: `${errorStatus}: ${errorMessage}`, at },
  }
}

/** A cancel and a time limit have their own Event reasons; every other failure is `Failed`. */
function failureEvent(errorStatus: string): Pick<Transition, 'reason' | 'action'> {
  if (errorStatus === OPERATOR_FAILURES.CANCELLED) return { reason: 'Cancelled', action: 'Cancel' }
  if (errorStatus === OPERATOR_FAILURES.TIMEOUT) return { reason: 'TimedOut', action: 'Fail' }
  return { reason: 'Failed', action: 'Fail' }
}

export interface FinishedCommandsDeps {
  batch: BatchV1Api
  core: CoreV1Api
  caches: Caches
  events: EventRecorder
  publisher: TerminalPublisher
  clock: () => Date
}

export class FinishedCommands {
  /**
   * `namespace/name` → uid of the finished MediaCommands this process has settled. A process
   * starts with none, so after a restart or a failover every finished command is settled once more.
   */
  private readonly settled = new Map<string, string>()

  constructor(private readonly d: FinishedCommandsDeps) {}

  /** Runs what `mc` (finished) needs, unless this process already did; throws when a step failed, so the reconcile is retried. */
  async settle(key: string, mc: MediaCommand, log: Logger): Promise<void> {
    if (this.settled.get(key) === mc.metadata.uid) return
    const effects = finishedEffects(mc, this.d.clock())
    // The announcement first: the API's record of the command depends on it, the rest is tidiness.
    if (effects.failure) await this.d.publisher.publish(effects.failure)
    if (effects.deleteJob) await this.deleteJob(mc, log)
    if (effects.deletePods) await this.deletePods(mc, log)
    if (effects.event) await this.d.events.record(mc, effects.event)
    this.settled.set(key, mc.metadata.uid ?? '')
  }

  /** The MediaCommand is gone: a new one of the same name starts unsettled. */
  forget(key: string): void {
    this.settled.delete(key)
  }

  private async deleteJob(mc: MediaCommand, log: Logger): Promise<void> {
    const job = await findJob(this.d.caches, this.d.batch, mc)
    if (!job || job.metadata?.deletionTimestamp || !ownedBy(job, mc)) return
    try {
      await this.d.batch.deleteNamespacedJob({
        name: job.metadata!.name!,
        namespace: job.metadata!.namespace!,
        // In the body: the apiserver reads DeleteOptions from a body when there is one, and a Job's
        // own default is to orphan its pods (a finalizer that keeps the Job until they are released).
        body: { propagationPolicy: 'Background', preconditions: { uid: job.metadata!.uid } },
      })
      log.info({ job: job.metadata?.name }, 'deleted the Job (its pod cannot start, or the command was cancelled)')
    } catch (err) {
      if (!isNotFound(err) && !isConflict(err)) throw err
    }
  }

  /** Listed from the apiserver, not the cache: a pod created a moment ago must not outlive the cancel. */
  private async deletePods(mc: MediaCommand, log: Logger): Promise<void> {
    const namespace = mc.metadata.namespace!
    const pods = await this.d.core.listNamespacedPod({ namespace, labelSelector: `${LABEL_COMMAND_ID}=${mc.metadata.name}` })
    for (const pod of pods.items) {
      if (pod.metadata?.deletionTimestamp) continue
      try {
        await this.d.core.deleteNamespacedPod({ name: pod.metadata!.name!, namespace, gracePeriodSeconds: 0 })
        log.info({ pod: pod.metadata?.name }, 'deleted the pod of a cancelled command')
      } catch (err) {
        if (!isNotFound(err)) throw err
      }
    }
  }
}
