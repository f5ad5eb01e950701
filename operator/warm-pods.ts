/**
 * Runner pods created ahead of their command, and the writes that hand one
 * to a command (docs/adr/0009-pods-created-ahead.md). Pure: the pool and the
 * reconciler (warm-pool.ts, reconciler.ts) do the I/O.
 *
 * A warm unit is a whole Job of the runner's usual shape (job-builder.ts):
 * both containers start with `--await-spec` and wait, Node loaded and NATS
 * connected, for a file the kubelet writes from the pod's own annotation
 * (a downward API volume). A claim is two writes by the operator:
 *
 *   1. the Job: the command's labels, its MediaCommand as controller owner,
 *      and the deadline moved to the time already spent plus the command's
 *      limit, conditional on the resourceVersion read (so two claims of one
 *      Job cannot both succeed);
 *   2. its pod: the command's labels and the spec in the annotation, which
 *      the kubelet then writes into both containers' claim file.
 *
 * Who can hand a waiting runner a command: whoever may patch pods in the
 * runner namespace (the operator's Role), and nobody through the network.
 * The runner reads the spec once and exits after that one command, so a
 * claimed pod never takes a second: the pool makes a new Job.
 */
import { createHash } from 'node:crypto'
import type { V1Job, V1Pod } from '@kubernetes/client-node'
import { commandSpecFromMediaCommand, LABEL_COMMAND_ID, type MediaCommand } from '../contracts/media-command.js'
import type { JobConfig } from './config.js'
import { commandLabels, commandOwnerReference, deadlineSecondsFor, LABEL_MANAGED_BY, MANAGED_BY, runnerJobSpec } from './job-builder.js'

/** On every warm Job and its pod, claimed or not: it was made ahead. */
export const LABEL_WARM_POD = 'ffkube.io/warm-pod'
/**
 * A hash of the warm Job's spec: a warm Job made from another config (an
 * upgrade's new image or settings) is never claimed, and the pool replaces it.
 */
export const LABEL_WARM_TEMPLATE = 'ffkube.io/warm-pod-template'
/** The pod annotation the claim writes the command's spec into. */
export const SPEC_ANNOTATION = 'ffkube.io/command-spec'
/** The label the Job controller puts on its pods. */
export const LABEL_JOB_NAME = 'batch.kubernetes.io/job-name'
export const CLAIM_VOLUME = 'claim'
export const CLAIM_DIR = '/var/run/ffkube/claim'
/** The file both containers wait on: empty until the claim's annotation reaches it. */
export const CLAIM_SPEC_PATH = `${CLAIM_DIR}/spec.json`
/**
 * A pod's annotations may hold 256 KiB in all; a spec above this goes the
 * usual way (its own Job, the spec in the env).
 */
export const MAX_WARM_SPEC_BYTES = 128 * 1024
/** A warm Job this close to its idle deadline is left to end; the pool makes another. */
const IDLE_DEADLINE_MARGIN_SECONDS = 60

/** The pool's size and the one shape its pods have. */
export interface WarmPodsConfig {
  /** Unclaimed warm Jobs to keep; 0 turns the pool off. */
  count: number
  /** The run container's CPU limit of a warm pod: a command fits only with the same vcpuMillis. */
  vcpuMillis: number
  /** Its memory limit: a command fits only with the same memoryMib. */
  memoryMib: number
  /** An unclaimed warm Job ends after this long (its activeDeadlineSeconds) and the pool makes another. */
  idleSeconds: number
}

export function warmJobName(suffix: string): string {
  return `ffkube-warm-${suffix}`
}

/** A warm Job of the pool's shape, owned by nobody until claimed. */
export function buildWarmJob(name: string, namespace: string, pool: WarmPodsConfig, config: JobConfig): V1Job {
  const labels = { [LABEL_MANAGED_BY]: MANAGED_BY, [LABEL_WARM_POD]: 'true' }
  const spec = runnerJobSpec(
    { env: [], args: ['--await-spec', CLAIM_SPEC_PATH] },
    { vcpuMillis: pool.vcpuMillis, memoryMib: pool.memoryMib },
    labels, pool.idleSeconds, config,
    (run, upload) => {
      for (const container of [run, upload]) container.volumeMounts!.push({ name: CLAIM_VOLUME, mountPath: CLAIM_DIR, readOnly: true })
      return [{
        name: CLAIM_VOLUME,
        downwardAPI: { items: [{ path: 'spec.json', fieldRef: { fieldPath: `metadata.annotations['${SPEC_ANNOTATION}']` } }], defaultMode: 0o444 },
      }]
    },
  )
  return { apiVersion: 'batch/v1', kind: 'Job', metadata: { name, namespace, labels: { ...labels, [LABEL_WARM_TEMPLATE]: templateHash(spec) } }, spec }
}

function templateHash(spec: object): string {
  return createHash('sha256').update(JSON.stringify(spec)).digest('hex').slice(0, 16)
}

/** The template label of the warm Jobs this config makes now. */
export function warmTemplate(namespace: string, pool: WarmPodsConfig, config: JobConfig): string {
  return buildWarmJob('', namespace, pool, config).metadata!.labels![LABEL_WARM_TEMPLATE]!
}

/**
 * Why `mc` cannot take a warm pod; undefined when it can. A warm pod has the
 * pool's limits and no per-command Secret, so a command with other limits, a
 * storage destination (its credentials Secret) or a yt-dlp download (its
 * cookies Secret and memory volume) gets a Job of its own, as before.
 */
export function whyNotWarm(mc: MediaCommand, pool: WarmPodsConfig): string | undefined {
  if (pool.count === 0) return 'the pool is off'
  if (mc.spec.cancel) return 'cancelled'
  if (mc.spec.commandType === 'YTDLP_COMMAND') return 'a yt-dlp command mounts its account\'s cookies Secret'
  if (mc.spec.storageDestination !== undefined) return 'a storage destination mounts its credentials Secret'
  if (mc.spec.vcpuMillis !== pool.vcpuMillis) return `its vcpuMillis (${mc.spec.vcpuMillis ?? 'none'}) is not the pool's ${pool.vcpuMillis}`
  if (mc.spec.memoryMib !== pool.memoryMib) return `its memoryMib (${mc.spec.memoryMib ?? 'none'}) is not the pool's ${pool.memoryMib}`
  if (Buffer.byteLength(specJson(mc)) > MAX_WARM_SPEC_BYTES) return `its spec is over ${MAX_WARM_SPEC_BYTES} bytes`
  return undefined
}

function specJson(mc: MediaCommand): string {
  return JSON.stringify(commandSpecFromMediaCommand(mc))
}

export function isWarmJob(job: V1Job): boolean {
  return job.metadata?.labels?.[LABEL_WARM_POD] === 'true'
}

/** The command a warm Job was claimed for; undefined while it waits. */
export function claimedFor(job: V1Job): string | undefined {
  return job.metadata?.labels?.[LABEL_COMMAND_ID]
}

export function jobFinished(job: V1Job): boolean {
  return job.status?.conditions?.some((c) => ['Complete', 'Failed', 'FailureTarget', 'SuccessCriteriaMet'].includes(c.type) && c.status === 'True') ?? false
}

function toMs(value: Date | string | undefined): number | undefined {
  if (value === undefined) return undefined
  return typeof value === 'string' ? Date.parse(value) : value.getTime()
}

/** Seconds from the Job's start to `now`, rounded up; undefined before the Job controller started it. */
function secondsSinceStart(job: V1Job, now: Date): number | undefined {
  const started = toMs(job.status?.startTime)
  return started === undefined ? undefined : Math.max(0, Math.ceil((now.getTime() - started) / 1000))
}

/**
 * The pod a command may claim this warm Job through: the Job waits, is not
 * ending, was made from the current config (`template`), and its one pod runs
 * with both containers started (so no start failure can come after the claim,
 * and both runners are past their start).
 */
export function claimablePod(job: V1Job, pods: readonly V1Pod[], now: Date, template: string): V1Pod | undefined {
  if (!isWarmJob(job) || claimedFor(job) !== undefined || jobFinished(job) || job.metadata?.deletionTimestamp) return undefined
  if (job.metadata?.labels?.[LABEL_WARM_TEMPLATE] !== template) return undefined
  const elapsed = secondsSinceStart(job, now)
  const idle = job.spec?.activeDeadlineSeconds
  if (elapsed === undefined || idle === undefined || elapsed + IDLE_DEADLINE_MARGIN_SECONDS >= idle) return undefined
  const own = pods.filter((p) => p.metadata?.labels?.[LABEL_JOB_NAME] === job.metadata?.name)
  if (own.length !== 1) return undefined
  const pod = own[0]!
  if (pod.metadata?.deletionTimestamp || pod.status?.phase !== 'Running') return undefined
  const statuses = pod.status?.containerStatuses ?? []
  if (statuses.length !== 2 || !statuses.every((s) => s.state?.running !== undefined)) return undefined
  return pod
}

/**
 * The merge patch that claims a warm Job for `mc`: conditional on the
 * resourceVersion it was chosen at; the deadline counts from the Job's own
 * start, so it becomes the time already spent waiting plus the command's limit.
 */
export function jobClaim(job: V1Job, mc: MediaCommand, config: JobConfig, now: Date): object {
  const elapsed = secondsSinceStart(job, now)
  if (elapsed === undefined) throw new Error(`warm Job ${job.metadata?.name} has not started`)
  return {
    metadata: { resourceVersion: job.metadata?.resourceVersion, labels: commandLabels(mc), ownerReferences: [commandOwnerReference(mc)] },
    spec: { activeDeadlineSeconds: elapsed + deadlineSecondsFor(mc, config) },
  }
}

/** The merge patch that hands a claimed Job's pod its command: the labels, and the spec the kubelet writes into the claim file. */
export function podClaim(mc: MediaCommand): object {
  return { metadata: { labels: commandLabels(mc), annotations: { [SPEC_ANNOTATION]: specJson(mc) } } }
}

/** Whether a pod of a claimed Job already carries `mc`'s claim. */
export function podClaimed(pod: V1Pod, mc: MediaCommand): boolean {
  return pod.metadata?.labels?.[LABEL_COMMAND_ID] === mc.metadata.name && pod.metadata?.annotations?.[SPEC_ANNOTATION] !== undefined
}
