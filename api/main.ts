/**
 * `npm start`: the whole service on this host (EXECUTOR=local). Starts its own
 * FerretDB, nats-server and MinIO for whichever of MONGODB_URL, NATS_URL and
 * S3_ENDPOINT is unset, then the API; SIGINT/SIGTERM stop everything it started.
 */
import { ensureLocalBusinessKey } from './accounts/local-business-key.js'
import { buildApp } from './app.js'
import { backgroundWork } from './background-work.js'
import { ConfigError, loadConfig } from './config.js'
import { ensureBucket, openConnections } from './connections.js'
import { parseEncryptionKeys, SecretBox } from './crypto/secret-box.js'
import { Dispatcher } from './dispatcher/dispatcher.js'
import { startLocalServices } from './local/local-services.js'
import { createLogger } from './logger.js'
import { listenUntilSignalled } from './server.js'
import { createWebhookDeliverer } from './webhook-delivery/create-deliverer.js'

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
  // The outbox dispatcher, the executor, the status projector and the file processor run in this process too.
  const work = backgroundWork(resolved, connections, logger)
  const dispatcher = new Dispatcher({ db: connections.db, executor: work.executor, logger })
  // The webhook deliverer too (its own entrypoint: api/webhook-delivery/main.ts).
  const deliverer = createWebhookDeliverer(resolved, connections, secretBox, logger)
  const app = await buildApp({
    logger,
    probes: connections.probes,
    db: connections.db,
    secretBox,
    rateLimits: config.rateLimits,
    nats: connections.nats,
    allowPrivateNetworks: config.allowPrivateNetworks,
    s3: connections.s3,
    s3Bucket: connections.s3Bucket,
    onCommandsAccepted: () => dispatcher.nudge(),
    onWebhookRedeliveryQueued: () => deliverer.nudge(),
    ytdlpAvailable: work.ytdlpAvailable,
  })
  // Local mode prints a ready-to-use Business key (DESIGN.md); an API on a cluster never prints a key.
  const localKey = config.executor === 'local' ? await ensureLocalBusinessKey(app.accounts, config.dataDir) : null
  await work.start()
  dispatcher.start()
  await deliverer.start()
  await listenUntilSignalled(app, {
    port: config.port,
    host: config.host,
    logger,
    onListening: (baseUrl) => {
      process.stdout.write(`ffkube is listening on ${baseUrl}\n`)
      if (localKey) process.stdout.write(`API key (business plan): ${localKey.api_key}\n`)
    },
    onClose: async () => {
      await dispatcher.stop()
      await deliverer.stop()
      await work.stop()
      await connections.close()
      await local.stop()
    },
  })
}

main().catch((err: unknown) => {
  process.stderr.write(`ffkube failed to start: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`)
  process.exit(1)
})
