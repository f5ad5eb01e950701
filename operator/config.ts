/**
 * The one place the operator reads its environment. The chart sets these;
 * README.md's Operator section lists them. A bad value stops the process at
 * start with a message naming the variable.
 */
import { hostname } from 'node:os'
import type { V1Toleration } from '@kubernetes/client-node'
import { natsCredentials, type NatsCredentials } from '../contracts/nats-authorization.js'
import { RUNNER_NODE_FLAGS } from '../contracts/runner-node-flags.js'
import { RESERVED_RUNNER_ENV, reservedRunnerEnvName } from './reserved-runner-env.js'
import type { WarmPodsConfig } from './warm-pods.js'

/** Requests and limits of the Job pod's containers, as Kubernetes quantities. */
export interface JobResources {
  cpuRequest: string
  cpuLimit: string
  memoryRequest: string
  memoryLimit: string
  ephemeralStorageRequest: string
  ephemeralStorageLimit: string
}

/** What the pure Job builder needs; a subset of OperatorConfig so tests can build one inline. */
export interface JobConfig {
  runnerImage: string
  imagePullPolicy: 'Always' | 'IfNotPresent' | 'Never'
  /** The runner's argv before its phase argument (fetch-run, upload). */
  runnerCommand: string[]
  runAsUser: number
  resources: JobResources
  workDirSizeLimit: string
  /** Default activeDeadlineSeconds; a command's timeLimitSeconds overrides it. */
  deadlineSeconds: number
  ttlSecondsAfterFinished: number
  /** A Secret of the chart holding the managed-storage credentials; only the upload container mounts it. */
  uploadSecretName: string
  /** The key in that Secret: JSON {"accessKeyId","secretAccessKey"}, read by the runner as S3_CREDENTIALS_FILE. */
  uploadSecretKey: string
  /** Non-secret environment for every runner container: RUNNER_ENV (limits, …) and the storage and URL-guard settings the API also has. */
  runnerEnv: Record<string, string>
  runtimeClassName: string | undefined
  nodeSelector: Record<string, string> | undefined
  tolerations: V1Toleration[] | undefined
  /** Passed to every container: where the runner reports status (an address, not a credential). */
  natsUrl: string | undefined
  serviceAccountName: string | undefined
}

export interface OperatorConfig {
  namespace: string
  /** Leader-election identity; the pod name in a cluster. */
  identity: string
  job: JobConfig
  /** Runner pods created ahead of their commands (docs/adr/0009-pods-created-ahead.md); count 0 = none. */
  warmPods: WarmPodsConfig
  /** Finished MediaCommands are deleted this long after completion; MongoDB keeps the record. */
  retentionSeconds: number
  /** How long an image pull may fail before the command is FAILED (pulls are retried by the kubelet). */
  imagePullGraceSeconds: number
  workers: number
  leaseName: string
  leaseDurationSeconds: number
  renewDeadlineSeconds: number
  retryPeriodSeconds: number
  metricsPort: number
  metricsHost: string
  natsUrl: string | undefined
  /** The service user (NATS_USER, NATS_PASSWORD); the operator's own, never put in a runner pod. */
  natsCredentials: NatsCredentials | undefined
  logLevel: string
}

/** A variable was set to something this module cannot use. */
export class OperatorConfigError extends Error {
  override name = 'OperatorConfigError'
}

function str(env: NodeJS.ProcessEnv, name: string, fallback: string): string {
  const raw = env[name]
  return raw === undefined || raw === '' ? fallback : raw
}

function optional(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const raw = env[name]
  return raw === undefined || raw === '' ? undefined : raw
}

function int(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name]
  if (raw === undefined || raw === '') return fallback
  const value = Number(raw)
  if (!/^\d+$/.test(raw) || value < min || value > max) {
    throw new OperatorConfigError(`${name} must be an integer from ${min} to ${max}, got "${raw}"`)
  }
  return value
}

function json<T>(env: NodeJS.ProcessEnv, name: string, check: (v: unknown) => boolean, shape: string): T | undefined {
  const raw = optional(env, name)
  if (raw === undefined) return undefined
  let value: unknown
  try {
    value = JSON.parse(raw)
  } catch {
    throw new OperatorConfigError(`${name} must be JSON (${shape}), got "${raw}"`)
  }
  if (!check(value)) throw new OperatorConfigError(`${name} must be ${shape}, got "${raw}"`)
  return value as T
}

const isStringMap = (v: unknown): boolean =>
  typeof v === 'object' && v !== null && !Array.isArray(v) && Object.values(v).every((x) => typeof x === 'string')
const isObjectArray = (v: unknown): boolean => Array.isArray(v) && v.every((x) => typeof x === 'object' && x !== null)

const PULL_POLICIES = ['Always', 'IfNotPresent', 'Never'] as const
/** RUNNER_ENV reaches the ffmpeg container too: nothing that looks like a credential may travel there. */
// PRIVATE_KEY, not PRIVATE: ALLOW_PRIVATE_NETWORKS is a setting runners may need, not a secret.
const SECRET_LOOKING = /SECRET|PASSWORD|TOKEN|CREDENTIAL|ACCESS_KEY|PRIVATE_KEY/i

function runnerEnv(env: NodeJS.ProcessEnv): Record<string, string> {
  const value = json<Record<string, string>>(env, 'RUNNER_ENV', isStringMap, 'an object of strings') ?? {}
  const secret = Object.keys(value).find((name) => SECRET_LOOKING.test(name))
  if (secret) {
    throw new OperatorConfigError(`RUNNER_ENV must not carry credentials (${secret}): every runner container sees it; use UPLOAD_SECRET_NAME`)
  }
  const reserved = reservedRunnerEnvName(value)
  if (reserved) throw new OperatorConfigError(`RUNNER_ENV must not set ${reserved}: ${RESERVED_RUNNER_ENV[reserved]}`)
  return { ...value, ...sharedRunnerSettings(env) }
}

/**
 * The settings a runner must share with the API, from the operator's own
 * variables of the same names: where outputs are stored (the projector
 * accepts only keys in that bucket) and whether private networks are
 * allowed (runners guard user URLs as the API does). Unset ones are left to
 * the runner's defaults, which are the API's.
 */
function sharedRunnerSettings(env: NodeJS.ProcessEnv): Record<string, string> {
  const settings: Record<string, string> = {}
  const names = [
    ['S3_BUCKET', optional(env, 'S3_BUCKET')],
    ['S3_ENDPOINT', optional(env, 'S3_ENDPOINT')],
    ['S3_REGION', optional(env, 'S3_REGION')],
    ['S3_FORCE_PATH_STYLE', optional(env, 'S3_FORCE_PATH_STYLE')],
    ['ALLOW_PRIVATE_NETWORKS', optional(env, 'ALLOW_PRIVATE_NETWORKS')],
  ] as const
  for (const [name, value] of names) if (value !== undefined) settings[name] = value
  return settings
}

/** Reads and validates the environment; throws OperatorConfigError naming the variable at fault. */
export function loadOperatorConfig(env: NodeJS.ProcessEnv = process.env): OperatorConfig {
  const pullPolicy = str(env, 'RUNNER_IMAGE_PULL_POLICY', 'IfNotPresent')
  if (!(PULL_POLICIES as readonly string[]).includes(pullPolicy)) {
    throw new OperatorConfigError(`RUNNER_IMAGE_PULL_POLICY must be one of ${PULL_POLICIES.join(', ')}, got "${pullPolicy}"`)
  }
  const runnerCommand = json<string[]>(
    env, 'RUNNER_COMMAND', (v) => Array.isArray(v) && v.length > 0 && v.every((x) => typeof x === 'string'), 'a non-empty array of strings',
  ) ?? ['node', ...RUNNER_NODE_FLAGS, '/app/dist/runner-image/runner/main.js']
  const natsUrl = optional(env, 'NATS_URL')
  const leaseDurationSeconds = int(env, 'LEASE_DURATION_SECONDS', 15, 2, 600)
  const renewDeadlineSeconds = int(env, 'LEASE_RENEW_DEADLINE_SECONDS', 10, 1, 600)
  if (renewDeadlineSeconds >= leaseDurationSeconds) {
    // A leader must give up before others may take over, or two would act at once.
    throw new OperatorConfigError('LEASE_RENEW_DEADLINE_SECONDS must be less than LEASE_DURATION_SECONDS')
  }
  return {
    namespace: str(env, 'WATCH_NAMESPACE', str(env, 'POD_NAMESPACE', 'ffkube')),
    identity: str(env, 'POD_NAME', hostname()),
    job: {
      runnerImage: str(env, 'RUNNER_IMAGE', 'ghcr.io/ffkube/runner:0.1.0'),
      imagePullPolicy: pullPolicy as JobConfig['imagePullPolicy'],
      runnerCommand,
      runAsUser: int(env, 'RUNNER_UID', 65532, 1, 2 ** 31 - 1),
      resources: {
        cpuRequest: str(env, 'JOB_CPU_REQUEST', '500m'),
        cpuLimit: str(env, 'JOB_CPU_LIMIT', '2'),
        memoryRequest: str(env, 'JOB_MEMORY_REQUEST', '512Mi'),
        memoryLimit: str(env, 'JOB_MEMORY_LIMIT', '2Gi'),
        ephemeralStorageRequest: str(env, 'JOB_EPHEMERAL_STORAGE_REQUEST', '1Gi'),
        ephemeralStorageLimit: str(env, 'JOB_EPHEMERAL_STORAGE_LIMIT', '10Gi'),
      },
      workDirSizeLimit: str(env, 'JOB_WORK_DIR_SIZE_LIMIT', '8Gi'),
      deadlineSeconds: int(env, 'JOB_DEADLINE_SECONDS', 3600, 1, 86400),
      ttlSecondsAfterFinished: int(env, 'JOB_TTL_SECONDS', 3600, 0, 7 * 86400),
      uploadSecretName: str(env, 'UPLOAD_SECRET_NAME', 'ffkube-storage'),
      uploadSecretKey: str(env, 'UPLOAD_SECRET_KEY', 'credentials.json'),
      runnerEnv: runnerEnv(env),
      runtimeClassName: optional(env, 'JOB_RUNTIME_CLASS_NAME'),
      nodeSelector: json<Record<string, string>>(env, 'JOB_NODE_SELECTOR', isStringMap, 'an object of strings'),
      tolerations: json<V1Toleration[]>(env, 'JOB_TOLERATIONS', isObjectArray, 'an array of tolerations'),
      natsUrl,
      serviceAccountName: optional(env, 'JOB_SERVICE_ACCOUNT_NAME'),
    },
    warmPods: {
      count: int(env, 'WARM_PODS', 0, 0, 32),
      vcpuMillis: int(env, 'WARM_POD_VCPU_MILLIS', 2000, 1, 256_000),
      memoryMib: int(env, 'WARM_POD_MEMORY_MIB', 8192, 1, 4_194_304),
      idleSeconds: int(env, 'WARM_POD_IDLE_SECONDS', 3600, 300, 7 * 86400),
    },
    retentionSeconds: int(env, 'RETENTION_SECONDS', 86400, 0, 365 * 86400),
    imagePullGraceSeconds: int(env, 'IMAGE_PULL_GRACE_SECONDS', 120, 0, 3600),
    workers: int(env, 'OPERATOR_WORKERS', 4, 1, 64),
    leaseName: str(env, 'LEASE_NAME', 'ffkube-operator'),
    leaseDurationSeconds,
    renewDeadlineSeconds,
    retryPeriodSeconds: int(env, 'LEASE_RETRY_PERIOD_SECONDS', 2, 1, 60),
    metricsPort: int(env, 'METRICS_PORT', 9090, 0, 65535),
    metricsHost: str(env, 'METRICS_HOST', '0.0.0.0'),
    natsUrl,
    natsCredentials: natsCredentials(env, OperatorConfigError),
    logLevel: str(env, 'LOG_LEVEL', 'info'),
  }
}
