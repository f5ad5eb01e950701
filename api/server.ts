import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify'
import { appPlugin, type AppOptions } from './app.js'
import type { TrustProxy } from './config.js'
import type { ReadinessProbe } from './health/readiness.js'
import { healthRoutes } from './health/routes.js'
import type { Logger } from './logger.js'
import { metricsRoutes } from './metrics/routes.js'
import type { ServiceMetrics } from './metrics/service-metrics.js'
import { buildValidator } from './validation/validator-compiler.js'

export interface ServerOptions {
  logger: Logger
  /** What /readyz checks: the probes of every role the process runs (none in most tests). */
  probes?: readonly ReadinessProbe[]
  /** Serves GET /metrics and times every request; unset in most tests. */
  metrics?: ServiceMetrics
  /** The HTTP API (app.ts), when the process runs the api role. */
  app?: AppOptions
  /**
   * TRUST_PROXY (config.trustProxy): which peers' X-Forwarded-For, -Host and
   * -Proto make request.ip, request.host and request.protocol. Unset: none,
   * so a client cannot claim another address or scheme.
   */
  trustProxy?: TrustProxy
}

/**
 * The process's one HTTP server: /metrics, the HTTP API when there is one,
 * and /healthz and /readyz, which every role answers (kubelet probes). Not
 * yet listening, so a test can `inject()` into it.
 */
export async function buildServer(options: ServerOptions): Promise<FastifyInstance> {
  // pino's Logger is a FastifyBaseLogger: typed as one, the instance is a plain FastifyInstance.
  const loggerInstance: FastifyBaseLogger = options.logger
  const server = Fastify({ loggerInstance, trustProxy: options.trustProxy ?? false, schemaController: { compilersFactory: { buildValidator } } })
  // Before every route, so every request is timed.
  if (options.metrics) await server.register(metricsRoutes, { metrics: options.metrics })
  if (options.app) await server.register(appPlugin, options.app)
  // After the API: the health routes answer errors through its handler too.
  await server.register(healthRoutes, { probes: options.probes ?? [] })
  return server
}

export interface ListenOptions {
  port: number
  host: string
  logger: Logger
  onListening(baseUrl: string): void
  /** Runs after the HTTP server has closed: roles, connections, child servers. */
  onClose(): Promise<void>
}

const SHUTDOWN_GRACE_MS = 10_000

/**
 * Listens, then on the first SIGINT or SIGTERM stops accepting requests, lets
 * those in flight finish, and runs onClose. A second signal, or a shutdown
 * that overruns its grace period, exits at once.
 */
export async function listenUntilSignalled(server: FastifyInstance, options: ListenOptions): Promise<void> {
  const address = await server.listen({ port: options.port, host: options.host })
  options.onListening(address)
  let closing = false
  const shutdown = async (signal: NodeJS.Signals) => {
    if (closing) {
      options.logger.warn({ signal }, 'second signal: exiting now')
      process.exit(130)
    }
    closing = true
    options.logger.info({ signal }, 'shutting down')
    const timer = setTimeout(() => {
      options.logger.error('shutdown overran its grace period: exiting')
      process.exit(1)
    }, SHUTDOWN_GRACE_MS)
    timer.unref()
    try {
      await server.close()
      await options.onClose()
    } finally {
      clearTimeout(timer)
    }
    options.logger.info('stopped')
  }
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.on(signal, (received) => {
      shutdown(received).catch((err: unknown) => {
        options.logger.error({ err }, 'shutdown failed')
        process.exit(1)
      })
    })
  }
}
