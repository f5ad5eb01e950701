/**
 * The MediaCommand custom resource: what the API's Kubernetes executor
 * creates and the operator reconciles into a Job. The CRD in
 * crds/mediacommands.ffkube.io.yaml is the schema of these types; change both
 * together.
 */
import type { CommandSpec, FormatSelector, StorageDestinationSpec } from './command-spec.js'
import type { CommandStatus, CommandType } from './command-types.js'

export const MEDIA_COMMAND_GROUP = 'ffkube.io'
export const MEDIA_COMMAND_VERSION = 'v1alpha1'
export const MEDIA_COMMAND_PLURAL = 'mediacommands'
export const MEDIA_COMMAND_KIND = 'MediaCommand'
export const MEDIA_COMMAND_API_VERSION = `${MEDIA_COMMAND_GROUP}/${MEDIA_COMMAND_VERSION}`

/** Labels on every MediaCommand, its Job and the Job's pod, so `-l` selects across them. */
export const LABEL_ACCOUNT_ID = 'ffkube.io/account-id'
export const LABEL_COMMAND_TYPE = 'ffkube.io/command-type'
export const LABEL_COMMAND_ID = 'ffkube.io/command-id'

/**
 * The runner's inputs, camelCase: the CommandSpec less its id, which is the CR
 * name. mediaCommandFromSpec always fills every field; the CRD requires only
 * accountId and commandType, so readers default the rest.
 */
export interface MediaCommandSpec {
  accountId: string
  commandType: CommandType
  inputFiles?: Record<string, string> | undefined
  /** Aliases of inputFiles that are the service's own storage_urls (CommandSpec.managedInputs). */
  managedInputs?: string[] | undefined
  /** The input_compressed_folder and its caps (CommandSpec.inputCompressedFolder, managedCompressedFolder, limits.folder). */
  compressedFolder?: MediaCommandFolder | undefined
  outputFiles?: Record<string, string> | undefined
  /**
   * CommandSpec.compressOutputs in a shape a structural CRD schema can state:
   * `{all: true}` for `true`, `{all: false, aliases}` for a list.
   */
  compressOutputs?: { all: boolean; aliases?: string[] | undefined } | undefined
  ffmpegCommands?: string[] | undefined
  ytdlp?: { inputUrls: Record<string, string>; formatSelector: FormatSelector } | undefined
  storageDestinationId?: string | undefined
  /** The destination's non-secret description; its credentials are in a Secret, never in the CR. */
  storageDestination?: StorageDestinationSpec | undefined
  submittedAt?: string | undefined
  /** Overrides the operator's default Job deadline for this command, in seconds (the API's max_command_run_seconds). */
  timeLimitSeconds?: number | undefined
  /** CPU request and limit of the run container, in millicores (the API's vcpu_count × 1000). */
  vcpuMillis?: number | undefined
  /** Memory limit of the run container, in MiB (per plan). */
  memoryMib?: number | undefined
  /** Most files the command's outputs may hold (per plan); the runner stops ffmpeg past it. */
  maxOutputFiles?: number | undefined
  /** Bytes of managed storage the account had left at hand-off (CommandSpec.storageRoomBytes); absent when no quota applies. */
  storageRoomBytes?: number | undefined
  /**
   * Set to true (never back) by the worker when the client cancels the
   * command; the operator then deletes the Job and its pods and ends the
   * status FAILED / CANCELLED. The one spec field that may change.
   */
  cancel?: boolean | undefined
}

/** A command's zip folder, as the fetch container needs it. */
export interface MediaCommandFolder {
  url: string
  /** The URL is one of the service's own storage_urls, read from managed storage. */
  managed: boolean
  maxBytes?: number | undefined
  maxEntries?: number | undefined
  maxRatio?: number | undefined
}

/** A Kubernetes-style condition; observedGeneration says which spec it judged. */
export interface MediaCommandCondition {
  type: string
  status: 'True' | 'False' | 'Unknown'
  reason: string
  message: string
  lastTransitionTime: string
  observedGeneration: number
}

/** What the runner reported of one output, for `kubectl describe`; MongoDB keeps the full record. */
export interface MediaCommandOutput {
  alias: string
  filename: string
  sizeBytes?: number | undefined
}

export interface MediaCommandStatus {
  phase?: CommandStatus | undefined
  observedGeneration?: number | undefined
  conditions?: MediaCommandCondition[] | undefined
  jobName?: string | undefined
  startTime?: string | undefined
  completionTime?: string | undefined
  /** Human duration ("1m5s") for the printer column; set once finished. */
  duration?: string | undefined
  progress?: number | undefined
  errorStatus?: string | undefined
  errorMessage?: string | undefined
  /** The runner's own FAILED reason from its status event; preferred over a generic RUNNER_FAILED. */
  runnerErrorStatus?: string | undefined
  runnerErrorMessage?: string | undefined
  /** uids of pods whose ffmpeg container never started: the Job retried them (operator/run-container-start.ts), and their pods are gone. */
  neverStartedPods?: string[] | undefined
  outputs?: MediaCommandOutput[] | undefined
}

export interface MediaCommandMetadata {
  name: string
  namespace?: string | undefined
  uid?: string | undefined
  generation?: number | undefined
  resourceVersion?: string | undefined
  creationTimestamp?: string | undefined
  deletionTimestamp?: string | undefined
  labels?: Record<string, string> | undefined
}

export interface MediaCommand {
  apiVersion: typeof MEDIA_COMMAND_API_VERSION
  kind: typeof MEDIA_COMMAND_KIND
  metadata: MediaCommandMetadata
  spec: MediaCommandSpec
  status?: MediaCommandStatus | undefined
}

/** Label values are at most 63 characters of [A-Za-z0-9._-], starting and ending alphanumeric. */
function labelValue(value: string): string {
  return value.replace(/[^A-Za-z0-9._-]/g, '_').slice(0, 63).replace(/^[^A-Za-z0-9]+|[^A-Za-z0-9]+$/g, '')
}

/** Builds the MediaCommand for an accepted command; pure, so the executor's retries build the same object. */
export function mediaCommandFromSpec(spec: CommandSpec, namespace: string, timeLimitSeconds?: number): MediaCommand {
  const mcSpec: MediaCommandSpec = {
    accountId: spec.accountId,
    commandType: spec.commandType,
    inputFiles: { ...spec.inputFiles },
    outputFiles: { ...spec.outputFiles },
    ffmpegCommands: [...spec.ffmpegCommands],
    submittedAt: spec.submittedAt,
  }
  if (spec.managedInputs && spec.managedInputs.length > 0) mcSpec.managedInputs = [...spec.managedInputs]
  if (spec.inputCompressedFolder) {
    mcSpec.compressedFolder = { url: spec.inputCompressedFolder, managed: spec.managedCompressedFolder ?? false, ...(spec.limits?.folder ? { ...spec.limits.folder } : {}) }
  }
  if (spec.compressOutputs !== undefined) {
    mcSpec.compressOutputs = spec.compressOutputs === true ? { all: true } : { all: false, aliases: [...spec.compressOutputs] }
  }
  if (spec.ytdlp) mcSpec.ytdlp = { inputUrls: { ...spec.ytdlp.inputUrls }, formatSelector: spec.ytdlp.formatSelector }
  if (spec.storageDestinationId) mcSpec.storageDestinationId = spec.storageDestinationId
  if (spec.storageDestination) mcSpec.storageDestination = { ...spec.storageDestination }
  if (spec.limits) {
    mcSpec.timeLimitSeconds = spec.limits.maxRunSeconds
    mcSpec.vcpuMillis = spec.limits.vcpuMillis
    mcSpec.memoryMib = spec.limits.memoryMib
    if (spec.limits.maxOutputFiles !== undefined) mcSpec.maxOutputFiles = spec.limits.maxOutputFiles
  }
  if (spec.storageRoomBytes !== undefined) mcSpec.storageRoomBytes = spec.storageRoomBytes
  if (timeLimitSeconds !== undefined) mcSpec.timeLimitSeconds = timeLimitSeconds
  return {
    apiVersion: MEDIA_COMMAND_API_VERSION,
    kind: MEDIA_COMMAND_KIND,
    metadata: {
      name: spec.commandId,
      namespace,
      labels: {
        [LABEL_ACCOUNT_ID]: labelValue(spec.accountId),
        [LABEL_COMMAND_TYPE]: spec.commandType,
        [LABEL_COMMAND_ID]: spec.commandId,
      },
    },
    spec: mcSpec,
  }
}

/** The CommandSpec the runner receives, rebuilt from a MediaCommand (the inverse of mediaCommandFromSpec). */
export function commandSpecFromMediaCommand(mc: MediaCommand): CommandSpec {
  const folder = mc.spec.compressedFolder
  const folderLimits =
    folder?.maxBytes !== undefined && folder.maxEntries !== undefined && folder.maxRatio !== undefined
      ? { folder: { maxBytes: folder.maxBytes, maxEntries: folder.maxEntries, maxRatio: folder.maxRatio } }
      : {}
  return {
    commandId: mc.metadata.name,
    accountId: mc.spec.accountId,
    commandType: mc.spec.commandType,
    inputFiles: { ...mc.spec.inputFiles },
    ...(mc.spec.managedInputs ? { managedInputs: [...mc.spec.managedInputs] } : {}),
    ...(folder ? { inputCompressedFolder: folder.url, managedCompressedFolder: folder.managed } : {}),
    outputFiles: { ...mc.spec.outputFiles },
    ...(mc.spec.compressOutputs ? { compressOutputs: mc.spec.compressOutputs.all ? true : [...(mc.spec.compressOutputs.aliases ?? [])] } : {}),
    ffmpegCommands: [...(mc.spec.ffmpegCommands ?? [])],
    ytdlp: mc.spec.ytdlp ? { inputUrls: { ...mc.spec.ytdlp.inputUrls }, formatSelector: mc.spec.ytdlp.formatSelector } : null,
    storageDestinationId: mc.spec.storageDestinationId ?? null,
    storageDestination: mc.spec.storageDestination ? { ...mc.spec.storageDestination } : null,
    submittedAt: mc.spec.submittedAt ?? mc.metadata.creationTimestamp ?? new Date(0).toISOString(),
    ...(mc.spec.storageRoomBytes !== undefined ? { storageRoomBytes: mc.spec.storageRoomBytes } : {}),
    ...(mc.spec.timeLimitSeconds !== undefined && mc.spec.vcpuMillis !== undefined && mc.spec.memoryMib !== undefined
      ? {
          limits: {
            maxRunSeconds: mc.spec.timeLimitSeconds,
            vcpuMillis: mc.spec.vcpuMillis,
            memoryMib: mc.spec.memoryMib,
            ...folderLimits,
            ...(mc.spec.maxOutputFiles !== undefined ? { maxOutputFiles: mc.spec.maxOutputFiles } : {}),
          },
        }
      : {}),
  }
}

/**
 * Failure codes the operator reports (error_status) when the runner could not
 * report for itself: the pod ran out of time, memory or node, never started,
 * or its Job vanished. The operator publishes them as the runner's FAILED
 * status event (contracts/status-events.ts), so the projector needs no second path.
 */
export const OPERATOR_FAILURES = {
  TIMEOUT: 'TIMEOUT',
  OUT_OF_MEMORY: 'OUT_OF_MEMORY',
  POD_EVICTED: 'POD_EVICTED',
  /** The pod was deleted (or vanished) before it finished, leaving no status to read. */
  POD_LOST: 'POD_LOST',
  IMAGE_PULL_ERROR: 'IMAGE_PULL_ERROR',
  JOB_DELETED: 'JOB_DELETED',
  RUNNER_FAILED: 'RUNNER_FAILED',
  /** The client cancelled the command (spec.cancel): its Job and pods were deleted. */
  CANCELLED: 'CANCELLED',
} as const
export type OperatorFailure = (typeof OPERATOR_FAILURES)[keyof typeof OPERATOR_FAILURES]
