import type { FfmpegPlanner } from '../../contracts/ffmpeg-plan.js'
import type { AccountChanges } from '../accounts/account-changes.js'
import type { Config } from '../config.js'
import type { Connections } from '../connections.js'
import type { SecretBox } from '../crypto/secret-box.js'
import type { ReadinessProbe } from '../health/readiness.js'
import type { Logger } from '../logger.js'
import type { Repositories } from '../repositories.js'
import type { ServiceMetrics } from '../metrics/service-metrics.js'

/**
 * One part of the service a process runs (FFKUBE_ROLES). Built without I/O;
 * api/main.ts starts the roles it built in order and stops them in reverse.
 */
export interface Role {
  /** What /readyz checks on this role's behalf. */
  probes: readonly ReadinessProbe[]
  start(): Promise<void>
  stop(): Promise<void>
}

/** What every role is built from: the process's config (service URLs resolved) and its shared clients. */
export interface RoleContext {
  config: Config
  connections: Connections
  /** Built once per process over `connections`. */
  repositories: Repositories
  /** The process's one account-change feed, on which `repositories` announce; the API's caches hear it. */
  accountChanges: AccountChanges
  secretBox: SecretBox
  logger: Logger
  metrics: ServiceMetrics
}

/**
 * The parts a composition root chooses beside the config. api/main.ts leaves
 * both unset (the policy's planner, the service's warm runner); a test's own
 * entry point (test/e2e/unpoliced-service.ts) hands in others.
 */
export interface ServiceParts {
  /** Plans run-ffmpeg-command's strings at acceptance (contracts/ffmpeg-plan.ts). */
  ffmpegPlanner?: FfmpegPlanner
  /** The warm runner's program (runner-image/runner/pool-worker.ts when unset). */
  poolWorkerMain?: string
}
