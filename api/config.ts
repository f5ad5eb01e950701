/**
 * The one place ffkube's API-side processes read their environment. Every
 * variable is listed here with its default; docs/operations/configuration.md's table
 * mirrors this file.
 */
import { availableParallelism } from 'node:os'
import { resolve } from 'node:path'
import { PLANS } from './accounts/plans.js'
import { DEFAULT_CONCURRENCY_LIMITS, type ConcurrencyLimits } from './dispatcher/concurrency-limits.js'
import { DEFAULT_STREAMS_PER_ACCOUNT } from './commands/stream-slots.js'
import { DEFAULT_SIGN_IN_FAILURES_PER_MINUTE } from './console/sign-in-throttle.js'
import { DEFAULT_COMMAND_LIMITS, MAX_RUN_SECONDS_CEILING, MAX_VCPU_CEILING, MIN_VCPU, type CommandLimitsByPlan, type PlanCommandLimits } from './commands/command-limits.js'
import { DEFAULT_RATE_LIMITS, type RateLimits } from './rate-limit/rate-limits.js'
import { DEFAULT_STORAGE_QUOTAS, type StorageQuotas } from './files/storage-quota.js'
import { DEFAULT_RETENTION_DAYS, MAX_RETENTION_DAYS_CEILING, type RetentionDaysByPlan } from './files/retention.js'
import { natsCredentials, type NatsCredentials } from '../contracts/nats-authorization.js'
import { ConfigError, optional, parseBoolean, parseCount, parseEnum, parseLimit, parsePerPlan, parseTrustProxy, type TrustProxy } from './config-values.js'

export { ConfigError, type TrustProxy }

export type Executor = 'local' | 'kubernetes'

/** Settings for an S3-compatible managed-storage bucket. */
export interface S3Config {
  endpoint: string | undefined
  bucket: string
  region: string
  accessKeyId: string | undefined
  secretAccessKey: string | undefined
  forcePathStyle: boolean
}

/** What one process runs: the chart runs each in its own Deployment, `npm start` all three. */
export const SERVICE_ROLES = ['api', 'worker', 'webhooks'] as const
export type ServiceRole = (typeof SERVICE_ROLES)[number]

export interface Config {
  /**
   * FFKUBE_ROLES: comma-separated `api` (HTTP API), `worker` (outbox dispatcher,
   * executor, status projector, file processor), `webhooks` (webhook deliverer);
   * default all three. Every role serves /healthz and /readyz on PORT.
   */
  roles: ServiceRole[]
  /** HTTP port; 0 picks a free one. */
  port: number
  /** Address to bind; loopback by default so a laptop does not expose the API. */
  host: string
  /** Unset: `npm start` runs its own MongoDB-wire server under dataDir. */
  mongodbUrl: string | undefined
  mongodbDatabase: string
  /** Unset: `npm start` runs its own nats-server under dataDir. */
  natsUrl: string | undefined
  /** NATS_USER and NATS_PASSWORD, for a server with users (docs/adr/0010-nats-authorization.md). */
  natsCredentials: NatsCredentials | undefined
  executor: Executor
  /** Unset S3_ENDPOINT: `npm start` runs its own S3 server (versitygw) under dataDir. */
  s3: S3Config
  /** Lets user URLs reach loopback and private networks: for development and tests only. */
  allowPrivateNetworks: boolean
  /** Where local mode keeps its databases, queues, objects and work directories. */
  dataDir: string
  logLevel: string
  /**
   * ENCRYPTION_KEYS: comma-separated `id:base64(32 bytes)`, the first sealing new
   * values. Unset: local mode generates one under dataDir.
   */
  encryptionKeys: string | undefined
  /**
   * Requests per minute per API key, by plan: RATE_LIMIT_FREE_PER_MINUTE,
   * RATE_LIMIT_TRIAL_PER_MINUTE, RATE_LIMIT_GROWTH_PER_MINUTE,
   * RATE_LIMIT_BUSINESS_PER_MINUTE (defaults 60, 120, 600, 1200); 0 = unlimited.
   */
  rateLimits: RateLimits
  /**
   * CONSOLE_SIGN_IN_FAILURES_PER_MINUTE: failed console sign-ins (a wrong API
   * key or sign-in link) one client address may make per minute before further
   * attempts get 429 (default 10); 0 = no limit.
   */
  consoleSignInFailuresPerMinute: number
  /**
   * TRUST_PROXY: whether the client address, host and scheme may be taken from
   * X-Forwarded-For/-Host/-Proto, as Fastify's trustProxy: false (default),
   * true (every peer), or the proxies' addresses and CIDRs.
   */
  trustProxy: TrustProxy
  /**
   * Commands of one account handed to the executor and not yet ended, at most,
   * by plan: CONCURRENT_COMMANDS_FREE, CONCURRENT_COMMANDS_TRIAL,
   * CONCURRENT_COMMANDS_GROWTH, CONCURRENT_COMMANDS_BUSINESS (defaults 1, 2,
   * 4, 8); 0 = unlimited. The rest wait QUEUED, served round robin across accounts.
   */
  concurrencyLimits: ConcurrencyLimits
  /** LOCAL_RUNNER_CONCURRENCY: runners at once in local mode; default the number of cores. */
  localRunnerConcurrency: number
  /**
   * COMMAND_DEADLINE_SECONDS: a local runner still running after this is killed,
   * its command FAILED (TIMEOUT). Default 900: a command string can loop its
   * input forever (`-stream_loop -1`), and each one holds a runner slot.
   */
  commandDeadlineSeconds: number
  /**
   * COMMAND_WORK_DIR_MAX_BYTES: a local runner whose work directory (inputs,
   * intermediate files, outputs) grows past this is killed, its command FAILED
   * (WORK_DIR_LIMIT_EXCEEDED). Default 8 GiB, a Kubernetes Job's work-dir size limit.
   */
  commandWorkDirMaxBytes: number
  /** KUBE_NAMESPACE: where EXECUTOR=kubernetes creates MediaCommands (default `ffkube`). */
  kubeNamespace: string
  /** WEBHOOK_TIMEOUT_MS: a webhook POST must answer 2xx within this (default 15000). */
  webhookTimeoutMs: number
  /**
   * EVENT_STREAMS_PER_ACCOUNT: event streams (GET /commands/:id/events) one
   * account may hold open on one API process at once; one more is 429.
   * Default 32: each holds a socket, a subscription and a share of record reads.
   */
  eventStreamsPerAccount: number
  /**
   * EVENT_STREAM_MAX_SECONDS: an event stream is ended after this with a
   * `retry:` hint, and its client resumes with Last-Event-ID. Default 3600.
   */
  eventStreamMaxSeconds: number
  /**
   * Per plan, the default and maximum of a command's max_command_run_seconds
   * and vcpu_count, and its memory limit on Kubernetes:
   * COMMAND_RUN_SECONDS_DEFAULT_<PLAN>, COMMAND_RUN_SECONDS_MAX_<PLAN>,
   * COMMAND_VCPU_DEFAULT_<PLAN>, COMMAND_VCPU_MAX_<PLAN>, COMMAND_MEMORY_MIB_<PLAN>,
   * and the caps on an input_compressed_folder: COMMAND_FOLDER_MAX_BYTES_<PLAN>
   * (uncompressed), COMMAND_FOLDER_MAX_ENTRIES_<PLAN>, COMMAND_FOLDER_MAX_RATIO_<PLAN>,
   * and the most files a command's outputs may hold, COMMAND_MAX_OUTPUT_FILES_<PLAN>
   * (PLAN = FREE, TRIAL, GROWTH, BUSINESS); defaults in api/commands/command-limits.ts.
   */
  commandLimits: CommandLimitsByPlan
  /**
   * Bytes an account may keep in managed storage, by plan: STORAGE_QUOTA_FREE_BYTES,
   * STORAGE_QUOTA_TRIAL_BYTES, STORAGE_QUOTA_GROWTH_BYTES, STORAGE_QUOTA_BUSINESS_BYTES
   * (defaults 1 GiB, 5 GiB, 100 GiB, 1 TiB); 0 = unlimited. Customer buckets are not counted.
   */
  storageQuotas: StorageQuotas
  /**
   * Days managed files (outputs, uploads, store-file files) are kept after
   * they are stored, by plan, and the most a command's retention_days may ask:
   * RETENTION_DAYS_FREE, RETENTION_DAYS_TRIAL, RETENTION_DAYS_GROWTH,
   * RETENTION_DAYS_BUSINESS (defaults 1, 7, 30, 90; at most 3650); 0 = kept
   * until deleted. Written on each file when it is stored.
   */
  retentionDays: RetentionDaysByPlan
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']

function parsePort(env: NodeJS.ProcessEnv): number {
  const raw = env.PORT ?? '8080'
  const port = Number(raw)
  if (!/^\d+$/.test(raw) || port > 65535) throw new ConfigError(`PORT must be a port number from 0 to 65535, got "${raw}"`)
  return port
}

function parseRetentionDays(env: NodeJS.ProcessEnv): RetentionDaysByPlan {
  const days = parsePerPlan(env, (plan) => `RETENTION_DAYS_${plan}`, DEFAULT_RETENTION_DAYS, 'days')
  for (const plan of PLANS) {
    if (days[plan] > MAX_RETENTION_DAYS_CEILING) throw new ConfigError(`RETENTION_DAYS_${plan.toUpperCase()} must be at most ${MAX_RETENTION_DAYS_CEILING} days (0 = kept until deleted), got ${days[plan]}`)
  }
  return days
}

function parseVcpu(name: string, raw: string | undefined, fallback: number): number {
  if (raw === undefined || raw === '') return fallback
  const value = Number(raw)
  if (!/^\d+(\.\d{1,3})?$/.test(raw) || value < MIN_VCPU || value > MAX_VCPU_CEILING) {
    throw new ConfigError(`${name} must be a number of cores from ${MIN_VCPU} to ${MAX_VCPU_CEILING} (at most 3 decimals), got "${raw}"`)
  }
  return value
}

function parseCommandLimits(env: NodeJS.ProcessEnv): CommandLimitsByPlan {
  const byPlan = {} as CommandLimitsByPlan
  for (const plan of PLANS) {
    const name = (what: string) => `COMMAND_${what}_${plan.toUpperCase()}`
    const fallback = DEFAULT_COMMAND_LIMITS[plan]
    const limits: PlanCommandLimits = {
      runSecondsDefault: parseCount(name('RUN_SECONDS_DEFAULT'), env[name('RUN_SECONDS_DEFAULT')], fallback.runSecondsDefault),
      runSecondsMax: parseCount(name('RUN_SECONDS_MAX'), env[name('RUN_SECONDS_MAX')], fallback.runSecondsMax),
      vcpuDefault: parseVcpu(name('VCPU_DEFAULT'), env[name('VCPU_DEFAULT')], fallback.vcpuDefault),
      vcpuMax: parseVcpu(name('VCPU_MAX'), env[name('VCPU_MAX')], fallback.vcpuMax),
      memoryMib: parseCount(name('MEMORY_MIB'), env[name('MEMORY_MIB')], fallback.memoryMib),
      folder: {
        maxBytes: parseCount(name('FOLDER_MAX_BYTES'), env[name('FOLDER_MAX_BYTES')], fallback.folder.maxBytes),
        maxEntries: parseCount(name('FOLDER_MAX_ENTRIES'), env[name('FOLDER_MAX_ENTRIES')], fallback.folder.maxEntries),
        maxRatio: parseCount(name('FOLDER_MAX_RATIO'), env[name('FOLDER_MAX_RATIO')], fallback.folder.maxRatio),
      },
      maxOutputFiles: parseCount(name('MAX_OUTPUT_FILES'), env[name('MAX_OUTPUT_FILES')], fallback.maxOutputFiles),
    }
    // The MediaCommand CRD's bounds: a smaller value would be refused by the apiserver at hand-off.
    if (limits.memoryMib < 64) throw new ConfigError(`${name('MEMORY_MIB')} must be at least 64, got ${limits.memoryMib}`)
    if (limits.runSecondsMax > MAX_RUN_SECONDS_CEILING) throw new ConfigError(`${name('RUN_SECONDS_MAX')} must be at most ${MAX_RUN_SECONDS_CEILING}, got ${limits.runSecondsMax}`)
    // A default above the maximum would refuse every request that names no limit.
    if (limits.runSecondsDefault > limits.runSecondsMax) throw new ConfigError(`${name('RUN_SECONDS_DEFAULT')} (${limits.runSecondsDefault}) must not exceed ${name('RUN_SECONDS_MAX')} (${limits.runSecondsMax})`)
    if (limits.vcpuDefault > limits.vcpuMax) throw new ConfigError(`${name('VCPU_DEFAULT')} (${limits.vcpuDefault}) must not exceed ${name('VCPU_MAX')} (${limits.vcpuMax})`)
    byPlan[plan] = limits
  }
  return byPlan
}

/** EVENT_STREAM_MAX_SECONDS: a day at most, far inside what a Node timer can hold (a longer one would fire at once). */
function parseStreamLifetime(env: NodeJS.ProcessEnv): number {
  const seconds = parseCount('EVENT_STREAM_MAX_SECONDS', env.EVENT_STREAM_MAX_SECONDS, 3600)
  if (seconds > 86_400) throw new ConfigError(`EVENT_STREAM_MAX_SECONDS must be at most 86400 (a day), got ${seconds}`)
  return seconds
}

function parseRoles(raw: string | undefined): ServiceRole[] {
  if (raw === undefined || raw.trim() === '') return [...SERVICE_ROLES]
  const roles = raw.split(',').map((role) => role.trim())
  for (const role of roles) {
    if (!SERVICE_ROLES.includes(role as ServiceRole)) {
      throw new ConfigError(`FFKUBE_ROLES must list roles from ${SERVICE_ROLES.join(', ')}, got "${role}"`)
    }
  }
  return [...new Set(roles as ServiceRole[])]
}

/**
 * On a cluster nothing is started locally: the service's servers and keys must
 * be configured. S3_ENDPOINT may stay unset there (AWS S3 itself).
 */
export function requireExternalServices(config: Config, who = 'ffkube outside local mode'): Config {
  const missing = ([['mongodbUrl', 'MONGODB_URL'], ['natsUrl', 'NATS_URL'], ['encryptionKeys', 'ENCRYPTION_KEYS']] as const)
    .filter(([name]) => !config[name])
    .map(([, variable]) => variable)
  if (missing.length > 0) throw new ConfigError(`${missing.join(', ')} must be set for ${who}`)
  return config
}

/** Reads and validates the environment; throws ConfigError naming the variable at fault. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const s3: S3Config = {
    endpoint: optional(env.S3_ENDPOINT),
    bucket: optional(env.S3_BUCKET) ?? 'ffkube',
    region: optional(env.S3_REGION) ?? 'us-east-1',
    accessKeyId: optional(env.S3_ACCESS_KEY_ID),
    secretAccessKey: optional(env.S3_SECRET_ACCESS_KEY),
    forcePathStyle: parseBoolean('S3_FORCE_PATH_STYLE', env.S3_FORCE_PATH_STYLE, true),
  }
  if (s3.endpoint && !/^https?:\/\//.test(s3.endpoint)) {
    throw new ConfigError(`S3_ENDPOINT must be an http:// or https:// URL, got "${s3.endpoint}"`)
  }
  return {
    roles: parseRoles(env.FFKUBE_ROLES),
    port: parsePort(env),
    host: optional(env.HOST) ?? '127.0.0.1',
    mongodbUrl: optional(env.MONGODB_URL),
    mongodbDatabase: optional(env.MONGODB_DATABASE) ?? 'ffkube',
    natsUrl: optional(env.NATS_URL),
    natsCredentials: natsCredentials(env, ConfigError),
    executor: parseEnum('EXECUTOR', env.EXECUTOR, ['local', 'kubernetes'] as const, 'local'),
    s3,
    allowPrivateNetworks: parseBoolean('ALLOW_PRIVATE_NETWORKS', env.ALLOW_PRIVATE_NETWORKS, false),
    dataDir: resolve(optional(env.FFKUBE_DATA_DIR) ?? '.ffkube'),
    logLevel: parseEnum('LOG_LEVEL', env.LOG_LEVEL, LOG_LEVELS, 'info'),
    encryptionKeys: optional(env.ENCRYPTION_KEYS),
    rateLimits: parsePerPlan(env, (plan) => `RATE_LIMIT_${plan}_PER_MINUTE`, DEFAULT_RATE_LIMITS, 'requests per minute'),
    consoleSignInFailuresPerMinute: parseLimit('CONSOLE_SIGN_IN_FAILURES_PER_MINUTE', env.CONSOLE_SIGN_IN_FAILURES_PER_MINUTE, DEFAULT_SIGN_IN_FAILURES_PER_MINUTE, 'failed sign-ins per minute'),
    trustProxy: parseTrustProxy(env.TRUST_PROXY),
    concurrencyLimits: parsePerPlan(env, (plan) => `CONCURRENT_COMMANDS_${plan}`, DEFAULT_CONCURRENCY_LIMITS, 'commands'),
    localRunnerConcurrency: parseCount('LOCAL_RUNNER_CONCURRENCY', env.LOCAL_RUNNER_CONCURRENCY, availableParallelism()),
    commandDeadlineSeconds: parseCount('COMMAND_DEADLINE_SECONDS', env.COMMAND_DEADLINE_SECONDS, 900),
    commandWorkDirMaxBytes: parseCount('COMMAND_WORK_DIR_MAX_BYTES', env.COMMAND_WORK_DIR_MAX_BYTES, 8 * 1024 ** 3),
    kubeNamespace: optional(env.KUBE_NAMESPACE) ?? 'ffkube',
    webhookTimeoutMs: parseCount('WEBHOOK_TIMEOUT_MS', env.WEBHOOK_TIMEOUT_MS, 15_000),
    eventStreamsPerAccount: parseCount('EVENT_STREAMS_PER_ACCOUNT', env.EVENT_STREAMS_PER_ACCOUNT, DEFAULT_STREAMS_PER_ACCOUNT),
    eventStreamMaxSeconds: parseStreamLifetime(env),
    commandLimits: parseCommandLimits(env),
    storageQuotas: parsePerPlan(env, (plan) => `STORAGE_QUOTA_${plan}_BYTES`, DEFAULT_STORAGE_QUOTAS, 'bytes'),
    retentionDays: parseRetentionDays(env),
  }
}
