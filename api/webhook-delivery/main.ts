/**
 * The webhook deliverer as its own process (the chart scales it apart from
 * the API; `npm start` runs it inside its one process instead). Needs
 * MONGODB_URL, NATS_URL and ENCRYPTION_KEYS (the API's, to open signing
 * secrets); SIGINT/SIGTERM stop it after attempts in flight are cut short.
 */
import { ConfigError, loadConfig } from '../config.js'
import { openConnections } from '../connections.js'
import { parseEncryptionKeys, SecretBox } from '../crypto/secret-box.js'
import { createLogger } from '../logger.js'
import { createWebhookDeliverer } from './create-deliverer.js'

async function main(): Promise<void> {
  let config
  try {
    config = loadConfig()
    for (const name of ['mongodbUrl', 'natsUrl', 'encryptionKeys'] as const) {
      if (!config[name]) throw new ConfigError(`${{ mongodbUrl: 'MONGODB_URL', natsUrl: 'NATS_URL', encryptionKeys: 'ENCRYPTION_KEYS' }[name]} must be set for the webhook deliverer`)
    }
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`ffkube-webhook-deliverer: ${err.message}\n`)
      process.exit(2)
    }
    throw err
  }
  const logger = createLogger('ffkube-webhook-deliverer', config.logLevel)
  const connections = await openConnections({
    mongodbUrl: config.mongodbUrl!,
    mongodbDatabase: config.mongodbDatabase,
    natsUrl: config.natsUrl!,
    s3: config.s3,
    name: 'ffkube-webhook-deliverer',
  })
  const deliverer = createWebhookDeliverer(config, connections, new SecretBox(parseEncryptionKeys(config.encryptionKeys!)), logger)
  await deliverer.start()
  let stopping = false
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.on(signal, () => {
      if (stopping) process.exit(130)
      stopping = true
      logger.info({ signal }, 'shutting down')
      deliverer
        .stop()
        .then(() => connections.close())
        .then(
          () => logger.info('stopped'),
          (err: unknown) => {
            logger.error({ err }, 'shutdown failed')
            process.exit(1)
          },
        )
    })
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`ffkube-webhook-deliverer failed to start: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`)
  process.exit(1)
})
