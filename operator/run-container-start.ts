/**
 * A runner pod whose run container the runtime created but never started
 * (reason StartError, exit code 128: containerd restarting while it created
 * the container is the cause seen on the real node) is retried, not failed.
 *
 * Why a retry is safe: the user's command never ran. The run container is the
 * one that fetches the inputs and runs ffmpeg (job-builder.ts), so nothing was
 * fetched, nothing ran and nothing was reported; the upload container beside
 * it reports nothing before the run hands over (runner-image/runner/phases.ts).
 * The work volume is an emptyDir of the pod, so the next pod starts empty.
 *
 * Why exit code 128 names exactly that: the runner exits 0, 1 or 2
 * (runner-image/runner/main.ts), Node's own codes are below 128, and a signal
 * gives 128 + its number (an OOM kill 137, SIGTERM 143). 128 is what the
 * kubelet records for a container whose start failed.
 *
 * Three parts, one rule:
 *   - the Job's podFailurePolicy ignores such a pod (the Job makes a new one
 *     and the failure does not count against backoffLimit 0);
 *   - the Job acts only once the pod is terminal, and its upload container
 *     would wait RUN_START_LIMIT_MS (120 s) for a run that never comes: the
 *     operator deletes the pod at once (podsToEnd), which ends the upload
 *     container and leaves the run container's exit code for the policy;
 *   - a run container that cannot start again and again (a broken runtime or
 *     image) would be retried until the command's deadline: after
 *     START_ATTEMPTS pods the operator fails the command with the runtime's
 *     own message (startFailure). The pods it counts are recorded in the
 *     MediaCommand's status (neverStartedPods), as the deleted ones vanish.
 */
import type { V1ContainerStatus, V1Pod, V1PodFailurePolicy } from '@kubernetes/client-node'
import { OPERATOR_FAILURES } from '../contracts/media-command.js'

/** The container that fetches and runs the user's command (job-builder.ts). */
export const RUN_CONTAINER = 'ffmpeg'
/** What the kubelet records for a container the runtime created and could not start. */
export const NEVER_STARTED_EXIT_CODE = 128
/** Pods whose run container never started before the command fails instead of trying another (at most the CRD's 10). */
export const START_ATTEMPTS = 3
/** The runtime's message can be long (an OCI error chain); the CR and the command keep this much. */
const MAX_RUNTIME_MESSAGE = 300

/** The Job's rule: a pod whose run container never started is ignored, so the Job makes another. */
export function podFailurePolicy(): V1PodFailurePolicy {
  return {
    rules: [{ action: 'Ignore', onExitCodes: { containerName: RUN_CONTAINER, operator: 'In', values: [NEVER_STARTED_EXIT_CODE] } }],
  }
}

function runContainerStatus(pod: V1Pod): V1ContainerStatus | undefined {
  return pod.status?.containerStatuses?.find((s) => s.name === RUN_CONTAINER)
}

/** The pod's run container ended without ever starting: the pod the Job's rule ignores. */
export function runContainerNeverStarted(pod: V1Pod): boolean {
  return runContainerStatus(pod)?.state?.terminated?.exitCode === NEVER_STARTED_EXIT_CODE
}

/**
 * Pods to delete now: their run container never started while the rest of the
 * pod still runs (the upload container waiting for it). Pods already ending
 * or ended are left to the kubelet and the Job.
 */
export function podsToEnd(pods: readonly V1Pod[]): V1Pod[] {
  return pods.filter((pod) =>
    runContainerNeverStarted(pod) && !pod.metadata?.deletionTimestamp && pod.status?.phase !== 'Failed' && pod.status?.phase !== 'Succeeded')
}

/** What the kubelet said of the run container that never started: reason and the runtime's message, cut short. */
export function neverStartedReason(pod: V1Pod): string {
  const terminated = runContainerStatus(pod)?.state?.terminated
  return [terminated?.reason, terminated?.message].filter(Boolean).join(': ').slice(0, MAX_RUNTIME_MESSAGE) || `exit code ${NEVER_STARTED_EXIT_CODE}`
}

/**
 * The uids of every pod of the command whose run container never started: those recorded
 * before (`recorded`, the MediaCommand's status) and those seen now. Recorded because the
 * pods do not stay: the operator deletes them, and the Job lets them go.
 */
export function neverStartedPods(recorded: readonly string[], pods: readonly V1Pod[]): string[] {
  const seen = pods.filter(runContainerNeverStarted).map((pod) => pod.metadata?.uid).filter((uid): uid is string => uid !== undefined)
  return [...new Set([...recorded, ...seen])].slice(0, START_ATTEMPTS)
}

/** The command's failure once START_ATTEMPTS of its pods never started their run container; undefined before. */
export function startFailure(neverStarted: readonly string[], pods: readonly V1Pod[]): { errorStatus: typeof OPERATOR_FAILURES.RUNNER_FAILED; errorMessage: string } | undefined {
  if (neverStarted.length < START_ATTEMPTS) return undefined
  const last = pods.filter(runContainerNeverStarted).at(-1)
  return {
    errorStatus: OPERATOR_FAILURES.RUNNER_FAILED,
    errorMessage: `the ${RUN_CONTAINER} container could not be started in ${neverStarted.length} pods${last ? ` (${neverStartedReason(last)})` : ''}`,
  }
}
