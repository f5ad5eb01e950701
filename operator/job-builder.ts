/**
 * Builds the one Job that runs a MediaCommand. Pure: the same MediaCommand and
 * config give the same Job, so a retried create is idempotent.
 *
 * Pod layout, and why: the process that runs the user's ffmpeg arguments must
 * see no credential and no token (DESIGN.md), so the pod has two containers
 * of the runner image, started together:
 *
 *   ffmpeg — `--phase fetch-run`: downloads inputs into /work (public URLs) and
 *            runs the user's commands there. No secret, no token.
 *   upload — `--phase upload`: loads the storage SDK, waits for the ffmpeg
 *            container's record in /work (runner-image/runner/hand-over.ts),
 *            uploads the outputs and reports SUCCESS. The only container that
 *            mounts the storage Secret (S3_CREDENTIALS_FILE) and, for a
 *            command with a storage destination, the per-command Secret
 *            `ffkube-<command_id>-destination` the API created
 *            (FFKUBE_DESTINATION_CREDENTIALS_FILE). Its HOME and TMPDIR are
 *            a volume of its own, never the work volume ffmpeg writes.
 *
 * Both are regular containers, not init containers or a native sidecar, on
 * purpose: the kubelet starts the next container only after its next relist
 * sees the previous one exit (or a sidecar run), up to a second each time,
 * while regular containers start in the same sync. That was most of a
 * command's overhead (docs/adr/0006-two-container-runner-pod.md). The
 * containers share no process namespace, so ffmpeg can never see the upload
 * process or its files. The pod's service-account token is not mounted at all.
 * The spec comes in FFKUBE_COMMAND_SPEC (pods have no stdin for `--spec -`);
 * a pod made ahead of its command (warm-pods.ts) is the same pod, waiting for
 * it in a file instead.
 */
import type { V1Container, V1EnvVar, V1Job, V1JobSpec, V1OwnerReference, V1SecurityContext, V1Volume } from '@kubernetes/client-node'
import {
  commandSpecFromMediaCommand,
  LABEL_ACCOUNT_ID,
  LABEL_COMMAND_ID,
  LABEL_COMMAND_TYPE,
  MEDIA_COMMAND_API_VERSION,
  MEDIA_COMMAND_KIND,
  type MediaCommand,
} from '../contracts/media-command.js'
import { DESTINATION_CREDENTIALS_FILE_ENV, DESTINATION_SECRET_KEY, destinationSecretName } from '../contracts/destination-credentials.js'
import { YTDLP_COOKIES_DIR_ENV, YTDLP_COOKIES_SECRET_KEY, YTDLP_COOKIES_SOURCE_ENV, ytdlpCookiesSecretName } from '../contracts/ytdlp-cookies.js'
import type { JobConfig } from './config.js'
import { atMost, mebibytes, millicores } from './quantities.js'
import { podFailurePolicy, RUN_CONTAINER } from './run-container-start.js'

export const WORK_DIR = '/work'
export const WORK_VOLUME = 'work'
export const CREDENTIALS_VOLUME = 'storage-credentials'
/** Where the upload container finds the storage Secret's keys. */
export const CREDENTIALS_DIR = '/var/run/secrets/ffkube/storage'
export const DESTINATION_CREDENTIALS_VOLUME = 'destination-credentials'
/** The upload container's own HOME and TMPDIR: the SDK may read config there, so never where ffmpeg writes. */
export const UPLOAD_SCRATCH_VOLUME = 'upload-scratch'
export const UPLOAD_SCRATCH_DIR = '/var/run/ffkube/upload'
/**
 * What the upload container requests, each lowered to the operator's own
 * request if that is less: it mostly waits beside ffmpeg, and the two
 * containers' requests add up for the scheduler, so its CPU request is the
 * least that still gives it a share (docs/benchmarks/throughput.md: at 50m a
 * pod of 100m + 50m let 8 runner pods fit where 12 bare ones did). Its
 * limits are the operator's.
 */
const UPLOAD_REQUESTS = { cpu: '10m', memory: '128Mi', 'ephemeral-storage': '64Mi' } as const
/** Where the upload container finds a storage destination's credentials. */
export const DESTINATION_CREDENTIALS_DIR = '/var/run/secrets/ffkube/destination'
/** A yt-dlp command's cookies Secret (optional: only accounts with cookies have one), in the upload container only. */
export const YTDLP_COOKIES_SECRET_VOLUME = 'ytdlp-cookies-secret'
export const YTDLP_COOKIES_SECRET_DIR = '/var/run/secrets/ffkube/ytdlp-cookies'
/** Where the ffmpeg container's fetch writes the cookies it was handed: memory, its own, never the work volume. */
export const YTDLP_COOKIES_VOLUME = 'ytdlp-cookies'
export const YTDLP_COOKIES_DIR = '/var/run/ffkube/ytdlp-cookies'
/** Pods of our Jobs carry this, so the operator's pod watch sees only them. */
export const LABEL_MANAGED_BY = 'app.kubernetes.io/managed-by'
export const MANAGED_BY = 'ffkube-operator'

/** `ffkube-<command_id>`, cut to the 63 characters a label value (job-name) allows. */
export function jobNameFor(commandId: string): string {
  return `ffkube-${commandId}`.slice(0, 63).replace(/-+$/, '')
}

/** Same restrictions on every container; the pod-level context cannot express the last three. */
function containerSecurityContext(runAsUser: number): V1SecurityContext {
  return {
    runAsNonRoot: true,
    runAsUser,
    runAsGroup: runAsUser,
    allowPrivilegeEscalation: false,
    readOnlyRootFilesystem: true,
    privileged: false,
    capabilities: { drop: ['ALL'] },
    seccompProfile: { type: 'RuntimeDefault' },
  }
}

/** A command's id and spec, as the containers of its own Job get them. */
function commandEnv(mc: MediaCommand): V1EnvVar[] {
  return [{ name: 'FFKUBE_COMMAND_ID', value: mc.metadata.name }, { name: 'FFKUBE_COMMAND_SPEC', value: JSON.stringify(commandSpecFromMediaCommand(mc)) }]
}

function baseEnv(ownEnv: readonly V1EnvVar[], config: JobConfig): V1EnvVar[] {
  const env: V1EnvVar[] = [
    ...ownEnv,
    { name: 'FFKUBE_WORK_DIR', value: WORK_DIR },
    // The runner reports to NATS in a pod; stdout would reach only the pod log.
    { name: 'FFKUBE_STATUS_REPORTER', value: config.natsUrl ? 'nats' : 'stdout' },
    // The root filesystem is read-only: temporary files go under the work volume too.
    { name: 'TMPDIR', value: `${WORK_DIR}/.tmp` },
    { name: 'HOME', value: `${WORK_DIR}/.home` },
  ]
  if (config.natsUrl) env.push({ name: 'NATS_URL', value: config.natsUrl })
  // Non-secret runner settings from the chart (S3_ENDPOINT, S3_BUCKET, limits …), sorted so the Job is deterministic.
  for (const name of Object.keys(config.runnerEnv).sort()) env.push({ name, value: config.runnerEnv[name]! })
  return env
}

function container(name: string, phase: string, own: CommandSource, config: JobConfig): V1Container {
  const r = config.resources
  return {
    name,
    image: config.runnerImage,
    imagePullPolicy: config.imagePullPolicy,
    command: [...config.runnerCommand, '--phase', phase, '--work-dir', WORK_DIR, ...own.args],
    workingDir: WORK_DIR,
    env: baseEnv(own.env, config),
    volumeMounts: [{ name: WORK_VOLUME, mountPath: WORK_DIR }],
    resources: {
      requests: { cpu: r.cpuRequest, memory: r.memoryRequest, 'ephemeral-storage': r.ephemeralStorageRequest },
      limits: { cpu: r.cpuLimit, memory: r.memoryLimit, 'ephemeral-storage': r.ephemeralStorageLimit },
    },
    securityContext: containerSecurityContext(config.runAsUser),
    terminationMessagePolicy: 'FallbackToLogsOnError',
  }
}

/**
 * The run container's limits from the command's (its vcpu_count and its
 * plan's memory): the CPU limit is the command's cores, which the kernel
 * enforces; the request stays the operator's (JOB_CPU_REQUEST) unless the
 * command asks for less, as with memory. A request of the whole vcpu_count
 * would keep a command of 2 cores off a 2-core node for ever (the node's own
 * pods request some), and left Pending it never ends: found on the real node.
 * Memory limit from the plan, the request kept at most that.
 */
function withCommandLimits(run: V1Container, { vcpuMillis, memoryMib }: RunLimits): void {
  const resources = run.resources!
  if (vcpuMillis !== undefined) {
    resources.limits!.cpu = `${vcpuMillis}m`
    const request = millicores(resources.requests!.cpu ?? '')
    if (request === null || request > vcpuMillis) resources.requests!.cpu = `${vcpuMillis}m`
  }
  if (memoryMib !== undefined) {
    resources.limits!.memory = `${memoryMib}Mi`
    const request = mebibytes(resources.requests!.memory ?? '')
    if (request === null || request > memoryMib) resources.requests!.memory = `${memoryMib}Mi`
  }
}

/** The upload container: the storage credentials, its own scratch directory, small requests. */
function uploadContainer(own: CommandSource, config: JobConfig): V1Container {
  const upload = container('upload', 'upload', own, config)
  const requests = upload.resources!.requests!
  requests.cpu = atMost(UPLOAD_REQUESTS.cpu, requests.cpu, millicores)
  requests.memory = atMost(UPLOAD_REQUESTS.memory, requests.memory, mebibytes)
  requests['ephemeral-storage'] = atMost(UPLOAD_REQUESTS['ephemeral-storage'], requests['ephemeral-storage'], mebibytes)
  for (const variable of upload.env!) {
    if (variable.name === 'TMPDIR') variable.value = `${UPLOAD_SCRATCH_DIR}/tmp`
    if (variable.name === 'HOME') variable.value = `${UPLOAD_SCRATCH_DIR}/home`
  }
  upload.env!.push({ name: 'S3_CREDENTIALS_FILE', value: `${CREDENTIALS_DIR}/${config.uploadSecretKey}` })
  upload.volumeMounts!.push(
    { name: UPLOAD_SCRATCH_VOLUME, mountPath: UPLOAD_SCRATCH_DIR },
    { name: CREDENTIALS_VOLUME, mountPath: CREDENTIALS_DIR, readOnly: true },
  )
  return upload
}

/** The command's own time limit wins over the operator's default. */
export function deadlineSecondsFor(mc: MediaCommand, config: JobConfig): number {
  return mc.spec.timeLimitSeconds ?? config.deadlineSeconds
}

/**
 * The volumes of a command's own Secrets, with their mounts added to the one
 * container that may read each: a storage destination's credentials (the
 * upload container), and a yt-dlp command's cookies (the Secret in the upload
 * container; the fetch gets the text over the hand-over socket into a memory
 * directory of the ffmpeg container: contracts/ytdlp-cookies.ts). The
 * Secrets are created by the API before the MediaCommand
 * (api/executors/kubernetes-executor.ts), so never waited for.
 */
function withCommandSecrets(mc: MediaCommand, run: V1Container, upload: V1Container): V1Volume[] {
  const volumes: V1Volume[] = []
  if (mc.spec.storageDestination !== undefined) {
    upload.env!.push({ name: DESTINATION_CREDENTIALS_FILE_ENV, value: `${DESTINATION_CREDENTIALS_DIR}/${DESTINATION_SECRET_KEY}` })
    upload.volumeMounts!.push({ name: DESTINATION_CREDENTIALS_VOLUME, mountPath: DESTINATION_CREDENTIALS_DIR, readOnly: true })
    volumes.push({ name: DESTINATION_CREDENTIALS_VOLUME, secret: { secretName: destinationSecretName(mc.metadata.name), items: [{ key: DESTINATION_SECRET_KEY, path: DESTINATION_SECRET_KEY }], defaultMode: 0o440 } })
  }
  if (mc.spec.commandType === 'YTDLP_COMMAND') {
    upload.env!.push({ name: YTDLP_COOKIES_SOURCE_ENV, value: `${YTDLP_COOKIES_SECRET_DIR}/${YTDLP_COOKIES_SECRET_KEY}` })
    upload.volumeMounts!.push({ name: YTDLP_COOKIES_SECRET_VOLUME, mountPath: YTDLP_COOKIES_SECRET_DIR, readOnly: true })
    run.env!.push({ name: YTDLP_COOKIES_DIR_ENV, value: YTDLP_COOKIES_DIR })
    run.volumeMounts!.push({ name: YTDLP_COOKIES_VOLUME, mountPath: YTDLP_COOKIES_DIR })
    volumes.push(
      { name: YTDLP_COOKIES_SECRET_VOLUME, secret: { secretName: ytdlpCookiesSecretName(mc.metadata.name), items: [{ key: YTDLP_COOKIES_SECRET_KEY, path: YTDLP_COOKIES_SECRET_KEY }], defaultMode: 0o440, optional: true } },
      { name: YTDLP_COOKIES_VOLUME, emptyDir: { medium: 'Memory', sizeLimit: '1Mi' } },
    )
  }
  return volumes
}

/** How the runner learns its command: env and argv of both containers (a warm pod: operator/warm-pods.ts). */
export interface CommandSource {
  env: readonly V1EnvVar[]
  args: readonly string[]
}

/** The run container's limits a command sets (MediaCommandSpec's vcpuMillis and memoryMib). */
export type RunLimits = Pick<MediaCommand['spec'], 'vcpuMillis' | 'memoryMib'>

/**
 * A runner Job's spec, the pod the top of this file describes; `extend` mounts what only some
 * pods have (a command's Secrets, a warm pod's claim file) and returns their volumes.
 */
export function runnerJobSpec(
  own: CommandSource, limits: RunLimits, labels: Record<string, string>, deadlineSeconds: number, config: JobConfig,
  extend: (run: V1Container, upload: V1Container) => V1Volume[] = () => [],
): V1JobSpec {
  const run = container(RUN_CONTAINER, 'fetch-run', own, config)
  withCommandLimits(run, limits)
  const upload = uploadContainer(own, config)
  const extraVolumes = extend(run, upload)
  return {
    // A rerun could upload twice or half-overwrite outputs; the command fails instead,
    // except for a pod whose run container never started (run-container-start.ts).
    backoffLimit: 0,
    podFailurePolicy: podFailurePolicy(),
    activeDeadlineSeconds: deadlineSeconds,
    ttlSecondsAfterFinished: config.ttlSecondsAfterFinished,
    template: {
      metadata: { labels },
      spec: {
        restartPolicy: 'Never',
        automountServiceAccountToken: false,
        enableServiceLinks: false,
        ...(config.serviceAccountName ? { serviceAccountName: config.serviceAccountName } : {}),
        ...(config.runtimeClassName ? { runtimeClassName: config.runtimeClassName } : {}),
        ...(config.nodeSelector ? { nodeSelector: { ...config.nodeSelector } } : {}),
        ...(config.tolerations ? { tolerations: config.tolerations.map((t) => ({ ...t })) } : {}),
        securityContext: {
          runAsNonRoot: true,
          runAsUser: config.runAsUser,
          runAsGroup: config.runAsUser,
          fsGroup: config.runAsUser,
          seccompProfile: { type: 'RuntimeDefault' },
        },
        volumes: [
          { name: WORK_VOLUME, emptyDir: { sizeLimit: config.workDirSizeLimit } },
          { name: UPLOAD_SCRATCH_VOLUME, emptyDir: { sizeLimit: '256Mi' } },
          // Defined for the pod, mounted by the upload container only (a volume reaches only containers that mount it).
          { name: CREDENTIALS_VOLUME, secret: { secretName: config.uploadSecretName, items: [{ key: config.uploadSecretKey, path: config.uploadSecretKey }], defaultMode: 0o440 } },
          ...extraVolumes,
        ],
        // The kubelet starts them in this order in one sync: ffmpeg first, the one whose start is on the critical path.
        containers: [run, upload],
      },
    },
  }
}

/** The labels a command's Job and pod carry, so `-l` selects across the MediaCommand, its Job and its pod. */
export function commandLabels(mc: MediaCommand): Record<string, string> {
  const labels: Record<string, string> = {
    ...(mc.metadata.labels ?? {}),
    [LABEL_COMMAND_ID]: mc.metadata.name,
    [LABEL_COMMAND_TYPE]: mc.spec.commandType,
    [LABEL_MANAGED_BY]: MANAGED_BY,
  }
  if (mc.metadata.labels?.[LABEL_ACCOUNT_ID]) labels[LABEL_ACCOUNT_ID] = mc.metadata.labels[LABEL_ACCOUNT_ID]
  return labels
}

/** The controller reference that makes a Job the MediaCommand's: deleting the CR deletes the Job. */
export function commandOwnerReference(mc: MediaCommand): V1OwnerReference {
  if (!mc.metadata.uid) throw new Error(`MediaCommand ${mc.metadata.name} has no uid; build Jobs from stored objects only`)
  return { apiVersion: MEDIA_COMMAND_API_VERSION, kind: MEDIA_COMMAND_KIND, name: mc.metadata.name, uid: mc.metadata.uid, controller: true, blockOwnerDeletion: true }
}

/** The Job for a MediaCommand, owned by it (controller reference) so deleting the CR deletes the Job. */
export function buildJob(mc: MediaCommand, config: JobConfig): V1Job {
  const labels = commandLabels(mc)
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name: jobNameFor(mc.metadata.name), namespace: mc.metadata.namespace, labels, ownerReferences: [commandOwnerReference(mc)] },
    spec: runnerJobSpec({ env: commandEnv(mc), args: [] }, mc.spec, labels, deadlineSecondsFor(mc, config), config, (run, upload) => withCommandSecrets(mc, run, upload)),
  }
}
