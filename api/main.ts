/**
 * `npm start`: the whole service on this host (EXECUTOR=local). Starts its own
 * FerretDB, nats-server and MinIO for whichever of MONGODB_URL, NATS_URL and
 * S3_ENDPOINT is unset, then the API; SIGINT/SIGTERM stop everything it started.
 */
import { buildApp } from './app.js'
import { ConfigError, loadConfig } from './config.js'
import { ensureBucket, openConnections } from './connections.js'
import { parseEncryptionKeys, SecretBox } from './crypto/secret-box.js'
import { startLocalServices } from './local/local-services.js'
import { createLogger } from './logger.js'
import { listenUntilSignalled } from './server.js'

async function main(): Promise<void> {
  let config
  try {
    config = loadConfig()
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`ffkube: ${err.message}\n`)
      process.exit(2)
    }
    throw err
  }
  const logger = createLogger('ffkube', config.logLevel)
  const local = await startLocalServices(config, logger)
  const resolved = local.config
  let connections
  try {
    connections = await openConnections({
      mongodbUrl: resolved.mongodbUrl!,
      mongodbDatabase: resolved.mongodbDatabase,
      natsUrl: resolved.natsUrl!,
      s3: resolved.s3,
      name: 'ffkube',
    })
    if (!config.s3.endpoint) await ensureBucket(connections.s3, resolved.s3.bucket)
  } catch (err) {
    await local.stop()
    throw err
  }
  const secretBox = new SecretBox(parseEncryptionKeys(resolved.encryptionKeys!))
  const app = await buildApp({ logger, probes: connections.probes, db: connections.db, secretBox })
  await listenUntilSignalled(app, {
    port: config.port,
    host: config.host,
    logger,
    onListening: (baseUrl) => {
      process.stdout.write(`ffkube is listening on ${baseUrl}\n`)
    },
    onClose: async () => {
      await connections.close()
      await local.stop()
    },
  })
}

main().catch((err: unknown) => {
  process.stderr.write(`ffkube failed to start: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`)
  process.exit(1)
})
