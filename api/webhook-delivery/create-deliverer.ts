import type { Config } from '../config.js'
import type { Connections } from '../connections.js'
import type { SecretBox } from '../crypto/secret-box.js'
import type { Logger } from '../logger.js'
import type { WebhookRecorder } from '../metrics/service-metrics.js'
import { WebhookConfigRepository } from '../webhooks/webhook-config-repository.js'
import { WebhookDeliverer } from './deliverer.js'

/** The deliverer as a process runs it, configured from the environment (api/config.ts). */
export function createWebhookDeliverer(config: Config, connections: Connections, secretBox: SecretBox, logger: Logger, metrics?: WebhookRecorder): WebhookDeliverer {
  return new WebhookDeliverer({
    db: connections.db,
    nats: connections.nats,
    configs: new WebhookConfigRepository(connections.db, secretBox),
    logger: logger.child({ component: 'webhook-deliverer' }),
    allowPrivateNetworks: config.allowPrivateNetworks,
    timeoutMs: config.webhookTimeoutMs,
    ...(metrics ? { metrics } : {}),
  })
}
