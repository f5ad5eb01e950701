/**
 * Pure mapping from what the cluster shows (the Job, its pods) to a
 * MediaCommand's status. Every failure the runner cannot report for itself
 * (deadline, OOM kill, eviction, image pull, lost pod or Job) ends in FAILED
 * with a named errorStatus, so no command stays PROCESSING forever.
 */
import type { V1ContainerStatus, V1Job, V1Pod } from '@kubernetes/client-node'
import type { CommandStatus } from '../contracts/command-types.js'
import {
  OPERATOR_FAILURES,
  type MediaCommand,
  type MediaCommandCondition,
  type MediaCommandStatus,
  type OperatorFailure,
} from '../contracts/media-command.js'
import { neverStartedPods, podsToEnd, runContainerNeverStarted, startFailure } from './run-container-start.js'

/** Waiting reasons that mean the image will not run; the kubelet retries pulls, so only a grace period ends them. */
const IMAGE_PULL_REASONS = new Set(['ErrImagePull', 'ImagePullBackOff', 'ErrImageNeverPull', 'InvalidImageName', 'RegistryUnavailable'])
/** These never heal by retrying: fail at once. */
const IMAGE_PULL_FATAL = new Set(['InvalidImageName', 'ErrImageNeverPull'])

export interface Failure {
  /** One of OPERATOR_FAILURES, or the runner's own error_status when it reported one. */
  errorStatus: OperatorFailure
  errorMessage: string
}

export interface Observation {
  mc: MediaCommand
  /** undefined: the Job is confirmed gone (not just missing from a cache). */
  job: V1Job | undefined
  pods: V1Pod[]
  now: Date
  imagePullGraceSeconds: number
  /** How long after a Job failed to wait for the runner's own FAILED event; 0 = do not wait. */
  runnerReportGraceMs?: number
}

export interface Derived {
  status: MediaCommandStatus
  /** Pods whose run container never started, to delete so their Job retries now (run-container-start.ts). */
  endPods: V1Pod[]
  /** Look again after this long even if nothing changes (an image pull grace period running out). */
  requeueAfterMs: number | undefined
}

/** The Job failed (or is about to): its pods decide why, so callers read them fresh. */
export function jobFailed(job: V1Job | undefined): boolean {
  return job ? jobCondition(job, 'Failed', 'FailureTarget') !== undefined : false
}

function jobCondition(job: V1Job, ...types: string[]): { reason?: string; message?: string } | undefined {
  return job.status?.conditions?.find((c) => types.includes(c.type) && c.status === 'True')
}

function allContainerStatuses(pod: V1Pod): V1ContainerStatus[] {
  return [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])]
}

/** Why a failed Job failed, most specific cause first: the Job's own reason, then what its pod shows. */
export function failureOf(job: V1Job, allPods: V1Pod[], deadlineSeconds: number | undefined): Failure {
  const failed = jobCondition(job, 'Failed', 'FailureTarget')
  // A pod whose run container never started was ignored by the Job (and deleted by us): its
  // exit code and deletion say nothing about why the command failed in the pod after it.
  const pods = allPods.filter((pod) => !runContainerNeverStarted(pod))
  if (failed?.reason === 'DeadlineExceeded') {
    return { errorStatus: OPERATOR_FAILURES.TIMEOUT, errorMessage: `the command ran longer than its time limit of ${deadlineSeconds ?? '?'} seconds` }
  }
  for (const pod of pods) {
    const oom = allContainerStatuses(pod).find((s) => s.state?.terminated?.reason === 'OOMKilled' || s.lastState?.terminated?.reason === 'OOMKilled')
    if (oom) return { errorStatus: OPERATOR_FAILURES.OUT_OF_MEMORY, errorMessage: `the ${oom.name} step ran out of memory` }
  }
  for (const pod of pods) {
    const disrupted = pod.status?.conditions?.find((c) => c.type === 'DisruptionTarget' && c.status === 'True')
    if (pod.status?.reason === 'Evicted' || disrupted) {
      const why = pod.status?.message ?? disrupted?.message ?? disrupted?.reason ?? 'evicted'
      return { errorStatus: OPERATOR_FAILURES.POD_EVICTED, errorMessage: `the pod was evicted: ${why}` }
    }
  }
  // Deleted while it ran (kubectl delete pod, a node drain without the eviction API): the Job
  // counts a terminating pod as failed at once, before any exit code, and an exit code seen
  // later is the SIGTERM's (143), not the runner's fault. Say what happened.
  const deleted = pods.find((pod) => pod.metadata?.deletionTimestamp)
  if (deleted) {
    return { errorStatus: OPERATOR_FAILURES.POD_LOST, errorMessage: `the runner pod ${deleted.metadata?.name ?? '(unnamed)'} was deleted before the command finished` }
  }
  for (const pod of pods) {
    const exited = allContainerStatuses(pod).find((s) => (s.state?.terminated?.exitCode ?? 0) !== 0)
    if (exited) {
      return { errorStatus: OPERATOR_FAILURES.RUNNER_FAILED, errorMessage: `the ${exited.name} step exited with code ${exited.state!.terminated!.exitCode}` }
    }
  }
  if (pods.length === 0) {
    return { errorStatus: OPERATOR_FAILURES.POD_LOST, errorMessage: `the pod disappeared before it finished (${failed?.reason ?? 'Failed'})` }
  }
  return { errorStatus: OPERATOR_FAILURES.RUNNER_FAILED, errorMessage: `the Job failed: ${failed?.reason ?? 'Failed'} ${failed?.message ?? ''}`.trim() }
}

/** A pod stuck on its image: fatal at once for a bad name, otherwise after the grace period. */
export function imagePullFailure(pods: V1Pod[], now: Date, graceSeconds: number): { failure?: Failure; retryInMs?: number } {
  let retryInMs: number | undefined
  for (const pod of pods) {
    for (const s of allContainerStatuses(pod)) {
      const reason = s.state?.waiting?.reason
      if (!reason || !IMAGE_PULL_REASONS.has(reason)) continue
      const since = toMs(pod.status?.startTime ?? pod.metadata?.creationTimestamp) ?? now.getTime()
      const left = since + graceSeconds * 1000 - now.getTime()
      if (IMAGE_PULL_FATAL.has(reason) || left <= 0) {
        const detail = s.state?.waiting?.message ? `: ${s.state.waiting.message}` : ''
        return { failure: { errorStatus: OPERATOR_FAILURES.IMAGE_PULL_ERROR, errorMessage: `the ${s.name} image could not be pulled (${reason})${detail}` } }
      }
      retryInMs = Math.min(retryInMs ?? left, left)
    }
  }
  return retryInMs === undefined ? {} : { retryInMs }
}

/**
 * Why the runner's pod waits for a node, as the scheduler said it
 * ("0/3 nodes are available: 3 Insufficient memory."); undefined when no pod
 * of the Job is unschedulable. The command waits (its Job's deadline still
 * bounds it, and a node may yet come: an autoscaler, a finished neighbour),
 * but whoever runs `kubectl describe mc` should see why.
 */
export function unschedulableReason(pods: V1Pod[]): string | undefined {
  for (const pod of pods) {
    const scheduled = pod.status?.conditions?.find((c) => c.type === 'PodScheduled')
    if (scheduled?.status === 'False' && scheduled.reason === 'Unschedulable') return scheduled.message ?? 'no node can run the runner pod'
  }
  return undefined
}

/** kubectl-style short duration: 45s, 3m12s, 1h2m. */
export function formatDuration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000))
  if (s < 60) return `${s}s`
  if (s < 3600) return `${Math.floor(s / 60)}m${s % 60}s`
  return `${Math.floor(s / 3600)}h${Math.floor((s % 3600) / 60)}m`
}

/** Sets one condition; lastTransitionTime moves only when the condition's status does, so a re-derive is stable. */
export function setCondition(
  conditions: MediaCommandCondition[], next: Omit<MediaCommandCondition, 'lastTransitionTime'>, now: Date,
): MediaCommandCondition[] {
  const old = conditions.find((c) => c.type === next.type)
  const lastTransitionTime = old && old.status === next.status ? old.lastTransitionTime : now.toISOString()
  const updated = { ...next, lastTransitionTime }
  return old ? conditions.map((c) => (c.type === next.type ? updated : c)) : [...conditions, updated]
}

/** Typed API calls give Dates, watches give strings: accept both. */
function toMs(value: Date | string | undefined): number | undefined {
  if (value === undefined) return undefined
  return typeof value === 'string' ? Date.parse(value) : value.getTime()
}

function toIso(value: Date | string | undefined): string | undefined {
  if (value === undefined) return undefined
  return typeof value === 'string' ? value : value.toISOString()
}

interface Phase {
  phase: CommandStatus
  failure?: Failure
  requeueAfterMs?: number
}

/** Slack for the API server's clock against ours when telling the Job's deadline from a deletion. */
const DEADLINE_SLACK_MS = 5_000

function nearDeadline(job: V1Job, now: Date): boolean {
  const started = toMs(job.status?.startTime)
  const deadline = job.spec?.activeDeadlineSeconds
  return started !== undefined && deadline !== undefined && now.getTime() >= started + deadline * 1000 - DEADLINE_SLACK_MS
}

/** When the command's Job started, or when the command was made if later: a warm Job started before it (warm-pods.ts). */
function startedAt(o: Observation): string {
  const job = toMs(o.job?.status?.startTime)
  const made = toMs(o.mc.metadata.creationTimestamp)
  if (job === undefined) return o.now.toISOString()
  return made !== undefined && made > job ? new Date(made).toISOString() : toIso(o.job!.status!.startTime)!
}

/** The limit the client set; a warm Job's deadline also counts the time it waited for its command (warm-pods.ts). */
function commandTimeLimit(o: Observation): number | undefined {
  return o.mc.spec.timeLimitSeconds ?? o.job?.spec?.activeDeadlineSeconds
}

function phaseOf(o: Observation): Phase {
  // Cancelled by the client (spec.cancel): FAILED whatever the Job shows (finished-commands.ts deletes the Job).
  if (o.mc.spec.cancel) {
    return { phase: 'FAILED', failure: { errorStatus: OPERATOR_FAILURES.CANCELLED, errorMessage: 'the command was cancelled by the client' } }
  }
  const deleted = { phase: 'FAILED' as const, failure: { errorStatus: OPERATOR_FAILURES.JOB_DELETED, errorMessage: `Job ${o.mc.status?.jobName ?? '(unknown)'} was deleted before it finished` } }
  // Decided: a Job deleted by hand fails the command rather than being recreated; a
  // second run could upload twice, and state only moves forward.
  if (!o.job) return deleted
  if (jobCondition(o.job, 'Complete', 'SuccessCriteriaMet')) return { phase: 'SUCCESS' }
  if (jobCondition(o.job, 'Failed', 'FailureTarget')) {
    const failure = failureOf(o.job, o.pods, commandTimeLimit(o))
    const runner = o.mc.status
    // The runner said why it exited non-zero (its status event): more precise than our RUNNER_FAILED.
    if (failure.errorStatus === OPERATOR_FAILURES.RUNNER_FAILED && runner?.runnerErrorStatus) {
      return { phase: 'FAILED', failure: { errorStatus: runner.runnerErrorStatus as OperatorFailure, errorMessage: runner.runnerErrorMessage ?? failure.errorMessage } }
    }
    if (failure.errorStatus === OPERATOR_FAILURES.RUNNER_FAILED && o.runnerReportGraceMs) {
      // Its event may trail the Job's failure by a moment: wait a bounded while, then decide anyway.
      const failedAt = toMs(o.job.status?.conditions?.find((c) => c.type === 'Failed' || c.type === 'FailureTarget')?.lastTransitionTime) ?? o.now.getTime()
      const left = failedAt + o.runnerReportGraceMs - o.now.getTime()
      if (left > 0) return { phase: o.mc.status?.phase === 'PROCESSING' ? 'PROCESSING' : 'QUEUED', requeueAfterMs: left }
    }
    return { phase: 'FAILED', failure }
  }
  // Being deleted (an orphan or foreground deletion waits on finalizers): as good as gone.
  if (o.job.metadata?.deletionTimestamp) return deleted
  // A pod deleted while it ran (kubectl delete pod, an eviction, a drain). With a podFailurePolicy
  // the Job counts it only once it is terminal, after its grace period, by when the runner may
  // have failed for the deletion's sake (a fetch cut off): say what happened now. The pods we
  // delete ourselves, whose run container never started, are retried instead.
  // The Job controller deletes the pods itself at the deadline, and its watch may show that before
  // the Job's own DeadlineExceeded: from a few seconds before the deadline on, that is what comes.
  const lost = o.pods.find((pod) => pod.metadata?.deletionTimestamp && !runContainerNeverStarted(pod))
  if (lost && !nearDeadline(o.job, o.now)) return { phase: 'FAILED', failure: failureOf(o.job, [lost], commandTimeLimit(o)) }
  const pull = imagePullFailure(o.pods, o.now, o.imagePullGraceSeconds)
  if (pull.failure) return { phase: 'FAILED', failure: pull.failure }
  const neverStarted = startFailure(neverStartedPods(o.mc.status?.neverStartedPods ?? [], o.pods), o.pods)
  if (neverStarted) return { phase: 'FAILED', failure: neverStarted }
  const running = (o.job.status?.active ?? 0) > 0 || (o.job.status?.ready ?? 0) > 0 || o.pods.some((p) => p.status?.phase === 'Running')
  // Between a pod that ended (a retried one, or one done before its Job says Complete) and what
  // comes next, nothing runs: the status stays PROCESSING, never back to QUEUED.
  const phase: CommandStatus = running || o.mc.status?.phase === 'PROCESSING' ? 'PROCESSING' : 'QUEUED'
  return pull.retryInMs === undefined ? { phase } : { phase, requeueAfterMs: pull.retryInMs }
}

/** The MediaCommand's next status. Never moves a finished command; callers skip finished ones first. */
export function deriveStatus(o: Observation): Derived {
  const prev = o.mc.status ?? {}
  const generation = o.mc.metadata.generation ?? 1
  const p = phaseOf(o)
  const status: MediaCommandStatus = { ...prev, phase: p.phase, observedGeneration: generation }
  if (o.job?.metadata?.name) status.jobName = o.job.metadata.name
  let conditions = prev.conditions ?? []
  if (status.jobName) {
    conditions = setCondition(conditions, { type: 'JobCreated', status: 'True', reason: 'Created', message: `Job ${status.jobName}`, observedGeneration: generation }, o.now)
  }
  if (p.phase === 'PROCESSING' || p.phase === 'SUCCESS' || p.phase === 'FAILED') {
    status.startTime = prev.startTime ?? startedAt(o)
  }
  const unschedulable = p.phase === 'QUEUED' || p.phase === 'PROCESSING' ? unschedulableReason(o.pods) : undefined
  if (unschedulable !== undefined) {
    conditions = setCondition(conditions, { type: 'PodScheduled', status: 'False', reason: 'Unschedulable', message: unschedulable, observedGeneration: generation }, o.now)
  } else if (conditions.some((c) => c.type === 'PodScheduled' && c.status === 'False') && o.pods.length > 0) {
    // Only once it was unschedulable: a command that never waited for a node carries no such condition.
    conditions = setCondition(conditions, { type: 'PodScheduled', status: 'True', reason: 'Scheduled', message: 'the runner pod has a node', observedGeneration: generation }, o.now)
  }
  if (p.phase === 'PROCESSING' && unschedulable === undefined) {
    conditions = setCondition(conditions, { type: 'Running', status: 'True', reason: 'PodRunning', message: 'the runner is working', observedGeneration: generation }, o.now)
  }
  if (p.phase === 'SUCCESS' || p.phase === 'FAILED') {
    const completion = (p.phase === 'SUCCESS' ? toIso(o.job?.status?.completionTime) : undefined) ?? o.now.toISOString()
    status.completionTime = completion
    status.duration = formatDuration(Date.parse(completion) - Date.parse(status.startTime!))
    conditions = setCondition(conditions, { type: 'Running', status: 'False', reason: 'Finished', message: 'the Job finished', observedGeneration: generation }, o.now)
  }
  if (p.phase === 'SUCCESS') {
    status.progress = 100
    conditions = setCondition(conditions, { type: 'Complete', status: 'True', reason: 'JobSucceeded', message: 'the command succeeded', observedGeneration: generation }, o.now)
  }
  if (p.phase === 'FAILED' && p.failure) {
    status.errorStatus = p.failure.errorStatus
    status.errorMessage = p.failure.errorMessage
    conditions = setCondition(conditions, { type: 'Failed', status: 'True', reason: p.failure.errorStatus, message: p.failure.errorMessage, observedGeneration: generation }, o.now)
  }
  status.conditions = conditions
  const neverStarted = neverStartedPods(prev.neverStartedPods ?? [], o.pods)
  if (neverStarted.length > 0) status.neverStartedPods = neverStarted
  const endPods = p.phase === 'FAILED' ? [] : podsToEnd(o.pods)
  return { status, endPods, requeueAfterMs: p.requeueAfterMs }
}
