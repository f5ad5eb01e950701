import { WebhookDeliverer } from '../webhooks/deliverer.js'
import type { Role, RoleContext } from './role.js'

/** The webhook deliverer as the other roles of its process see it. */
export interface WebhooksRole extends Role {
  /** The API queued a redelivery: the deliverer looks now instead of at its next poll. */
  redeliveryQueued(): void
}

/**
 * The webhook deliverer: consumes completion events and POSTs them, signed
 * with the account's secret (sealed with the API's ENCRYPTION_KEYS).
 * Its /readyz checks storage too, although it never writes there: DESIGN.md
 * fixes /readyz as "MongoDB, NATS, storage reachable" for every process, and
 * the chart's probes and users' dashboards rely on one meaning.
 */
export function webhooksRole({ config, connections, repositories, logger, metrics }: RoleContext): WebhooksRole {
  const deliverer = new WebhookDeliverer({
    deliveries: repositories.webhookDeliveries,
    attempts: repositories.webhookAttempts,
    commands: repositories.commands,
    nats: connections.nats,
    configs: repositories.webhookConfigs,
    logger: logger.child({ component: 'webhook-deliverer' }),
    allowPrivateNetworks: config.allowPrivateNetworks,
    timeoutMs: config.webhookTimeoutMs,
    metrics,
  })
  return {
    probes: [connections.probes.mongodb, connections.probes.nats, connections.probes.storage],
    redeliveryQueued: () => deliverer.nudge(),
    start: () => deliverer.start(),
    stop: () => deliverer.stop(),
  }
}
