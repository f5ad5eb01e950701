import type { Config } from '../config.js'
import type { Connections } from '../connections.js'
import type { SecretBox } from '../crypto/secret-box.js'
import type { ReadinessProbe } from '../health/readiness.js'
import type { Logger } from '../logger.js'
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
  secretBox: SecretBox
  logger: Logger
  metrics: ServiceMetrics
}

/**
 * Switches only a test-only entry point sets (test/e2e/unpoliced-service.ts);
 * api/main.ts never does, so no variable or request reaches them.
 */
export interface TestOnlySwitches {
  /** FFmpeg commands pass without the argument policy, to test the sandbox alone. */
  unsafeDisableFfmpegPolicyForTests?: boolean
}
