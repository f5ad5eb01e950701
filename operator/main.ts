/**
 * The operator process: reads its config, connects to the cluster (in-cluster
 * service account, or KUBECONFIG) and to NATS, serves /metrics, runs until
 * SIGTERM/SIGINT, then shuts down gracefully. Losing the Lease exits non-zero
 * so Kubernetes restarts the pod with clean state.
 */
import { KubeConfig } from '@kubernetes/client-node'
import { connect, type NatsConnection } from 'nats'
import { pino } from 'pino'
import { loadOperatorConfig, OperatorConfigError } from './config.js'
import { Metrics, serveMetrics } from './metrics.js'
import { Operator } from './operator.js'
import { natsPublisher, noPublisher } from './terminal-publisher.js'

async function main(): Promise<void> {
  let config
  try {
    config = loadOperatorConfig()
  } catch (err) {
    if (err instanceof OperatorConfigError) {
      pino().fatal(err.message)
      process.exit(2)
    }
    throw err
  }
  const logger = pino({ level: config.logLevel, base: { service: 'operator' }, timestamp: pino.stdTimeFunctions.isoTime })
  const kubeConfig = new KubeConfig()
  kubeConfig.loadFromDefault()

  let nats: NatsConnection | undefined
  // Reconnect forever, as the API side does: with the client's default (10 tries, ~20 s) a longer
  // NATS outage closed the connection for good, and the failures the operator detects (POD_LOST,
  // OUT_OF_MEMORY) went unpublished until its pod restarted.
  if (config.natsUrl) nats = await connect({ servers: config.natsUrl, ...config.natsCredentials, name: `ffkube-operator-${config.identity}`, maxReconnectAttempts: -1 })
  else logger.warn('NATS_URL is unset: failures the operator detects are recorded on the CR only')

  const metrics = new Metrics()
  const server = await serveMetrics(metrics, config.metricsPort, config.metricsHost)
  const operator = new Operator({ kubeConfig, config, logger, metrics, nats, publisher: nats ? natsPublisher(nats, logger) : noPublisher })

  let stopping = false
  const shutdown = async (code: number): Promise<void> => {
    if (stopping) return
    stopping = true
    logger.info({ code }, 'shutting down')
    await operator.stop()
    await new Promise((resolve) => server.close(resolve))
    await nats?.drain()
    process.exit(code)
  }
  const onSignal = (): void => {
    shutdown(0).catch((err: unknown) => {
      logger.error({ err }, 'shutdown failed')
      process.exit(1)
    })
  }
  process.once('SIGTERM', onSignal)
  process.once('SIGINT', onSignal)
  operator.once('lost-leadership', () => {
    shutdown(1).catch(() => process.exit(1))
  })
  await operator.start()
  logger.info({ metrics_port: (server.address() as { port: number }).port }, 'operator started')
}

main().catch((err: unknown) => {
  pino().fatal({ err }, 'operator failed to start')
  process.exit(1)
})
