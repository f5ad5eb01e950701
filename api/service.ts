/**
 * Runs the roles FFKUBE_ROLES names in this process, on one port:
 *   api      — the HTTP API (`/api/v1`, `/openapi.json`, `/docs`);
 *   worker   — the outbox dispatcher, the executor, the status projector and the file processor;
 *   webhooks — the webhook deliverer.
 * `npm start` runs all three (and, in local mode, the servers it needs); the
 * chart runs each in its own Deployment. Every role answers /healthz,
 * /readyz and /metrics, so a process without the API still has kubelet
 * probes and Prometheus metrics.
 */
import Fastify, { type FastifyInstance } from 'fastify'
import { ensureLocalBusinessKey } from './accounts/local-business-key.js'
import { buildApp } from './app.js'
import { backgroundWork, type BackgroundWork } from './background-work.js'
import { requireExternalServices, type Config } from './config.js'
import { ensureBucket, openConnections } from './connections.js'
import { parseEncryptionKeys, SecretBox } from './crypto/secret-box.js'
import { Dispatcher } from './dispatcher/dispatcher.js'
import { isExecutable, resolveTool } from './executors/tool-paths.js'
import { healthRoutes } from './health/routes.js'
import { metricsRoutes } from './metrics/routes.js'
import { ServiceMetrics } from './metrics/service-metrics.js'
import { startLocalServices } from './local/local-services.js'
import type { Logger } from './logger.js'
import { listenUntilSignalled } from './server.js'
import { createWebhookDeliverer } from './webhook-delivery/create-deliverer.js'

/**
 * Starts the configured roles and stops them on SIGINT/SIGTERM. In local mode
 * (EXECUTOR=local, unless `localServices` says otherwise) it first starts the
 * servers whose URLs are unset; otherwise they must all be configured.
 */
export async function runService(
  config: Config,
  logger: Logger,
  options: {
    localServices?: boolean
    /** TESTS ONLY (test/e2e/unpoliced-service.ts): FFmpeg commands pass without the argument policy, to test the sandbox alone. main.ts never sets it. */
    unsafeDisableFfmpegPolicyForTests?: boolean
  } = {},
): Promise<void> {
  const roles = new Set(config.roles)
  const local =
    (options.localServices ?? config.executor === 'local')
      ? await startLocalServices(config, logger)
      : { config: requireExternalServices(config), stop: async () => {} }
  const resolved = local.config
  let connections
  try {
    connections = await openConnections({
      mongodbUrl: resolved.mongodbUrl!,
      mongodbDatabase: resolved.mongodbDatabase,
      natsUrl: resolved.natsUrl!,
      s3: resolved.s3,
      name: `ffkube-${config.roles.join('-')}`,
    })
    if (!config.s3.endpoint) await ensureBucket(connections.s3, resolved.s3.bucket)
  } catch (err) {
    await local.stop()
    throw err
  }
  const secretBox = new SecretBox(parseEncryptionKeys(resolved.encryptionKeys!))
  const metrics = new ServiceMetrics()
  const testOnly = options.unsafeDisableFfmpegPolicyForTests ? { unsafeDisableFfmpegPolicyForTests: true } : {}
  const work: BackgroundWork | null = roles.has('worker') ? backgroundWork(resolved, connections, logger, secretBox, metrics, testOnly) : null
  const dispatcher = work ? new Dispatcher({ db: connections.db, executor: work.executor, logger, metrics }) : null
  const deliverer = roles.has('webhooks') ? createWebhookDeliverer(resolved, connections, secretBox, logger, metrics) : null
  let app: FastifyInstance
  if (roles.has('api')) {
    // Without a worker here, yt-dlp runs wherever the workers' runners run: a pod always has it.
    const ytdlp = config.executor === 'local' ? isExecutable(resolveTool('yt-dlp')) : true
    app = await buildApp({
      logger,
      probes: connections.probes,
      db: connections.db,
      secretBox,
      rateLimits: config.rateLimits,
      nats: connections.nats,
      allowPrivateNetworks: config.allowPrivateNetworks,
      s3: connections.s3,
      s3Bucket: connections.s3Bucket,
      // In-process nudges; a worker or deliverer in another process finds the work by polling.
      onCommandsAccepted: (commandIds) => dispatcher?.nudge(commandIds),
      onFilesQueued: () => work?.nudgeFileProcessor(),
      onWebhookRedeliveryQueued: () => deliverer?.nudge(),
      ytdlpAvailable: work ? work.ytdlpAvailable : () => ytdlp,
      metrics,
      ...testOnly,
    })
  } else {
    app = Fastify({ loggerInstance: logger }) as unknown as FastifyInstance
    await app.register(metricsRoutes, { metrics })
    await app.register(healthRoutes, { probes: connections.probes })
  }
  // Local mode prints a ready-to-use Business key (DESIGN.md); an API on a cluster never prints a key.
  const localKey = roles.has('api') && config.executor === 'local' ? await ensureLocalBusinessKey(app.accounts, config.dataDir) : null
  await work?.start()
  dispatcher?.start()
  await deliverer?.start()
  await listenUntilSignalled(app, {
    port: config.port,
    host: config.host,
    logger,
    onListening: (baseUrl) => {
      logger.info({ roles: config.roles, url: baseUrl, ...(work ? { sandbox: work.sandbox } : {}) }, 'ffkube started')
      if (!roles.has('api')) return
      process.stdout.write(`ffkube is listening on ${baseUrl}\n`)
      if (localKey) process.stdout.write(`API key (business plan): ${localKey.api_key}\n`)
    },
    onClose: async () => {
      await dispatcher?.stop()
      await deliverer?.stop()
      await work?.stop()
      await connections.close()
      await local.stop()
    },
  })
}
