/**
 * `npm start`: the whole service on this host (EXECUTOR=local). Starts its own
 * FerretDB, nats-server and MinIO for whichever of MONGODB_URL, NATS_URL and
 * S3_ENDPOINT is unset, then every role FFKUBE_ROLES names (default: the API,
 * the worker and the webhook deliverer); SIGINT/SIGTERM stop everything it
 * started. The container image runs this file too, one role per Deployment.
 */
import { ConfigError, loadConfig } from './config.js'
import { createLogger } from './logger.js'
import { runService } from './service.js'

async function main(): Promise<void> {
  try {
    const config = loadConfig()
    await runService(config, createLogger('ffkube', config.logLevel))
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`ffkube: ${err.message}\n`)
      process.exit(2)
    }
    throw err
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`ffkube failed to start: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`)
  process.exit(1)
})
