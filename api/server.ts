import type { FastifyInstance } from 'fastify'
import type { Logger } from './logger.js'

export interface ListenOptions {
  port: number
  host: string
  logger: Logger
  onListening(baseUrl: string): void
  /** Runs after the HTTP server has closed: connections, child servers. */
  onClose(): Promise<void>
}

const SHUTDOWN_GRACE_MS = 10_000

/**
 * Listens, then on the first SIGINT or SIGTERM stops accepting requests, lets
 * those in flight finish, and runs onClose. A second signal, or a shutdown
 * that overruns its grace period, exits at once.
 */
export async function listenUntilSignalled(app: FastifyInstance, options: ListenOptions): Promise<void> {
  const address = await app.listen({ port: options.port, host: options.host })
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
      await app.close()
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
