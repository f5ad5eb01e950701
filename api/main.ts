/**
 * The one entry point of the API side: `npm start` runs it with every role,
 * the chart's Deployments with one role each (FFKUBE_ROLES=api, worker or
 * webhooks). It starts local servers when needed, opens the connections,
 * builds the roles, wires in-process nudges between the roles it shares a
 * process with, starts them, listens, and on SIGINT/SIGTERM stops them in
 * reverse order.
 */
import { realpathSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { AccountChanges } from './accounts/account-changes.js'
import { ConfigError, loadConfig, requireExternalServices, type Config } from './config.js'
import { ensureBucket, openConnections } from './connections.js'
import { publishDispatchNudge } from './dispatcher/dispatch-nudges.js'
import { parseEncryptionKeys, SecretBox } from './crypto/secret-box.js'
import type { ReadinessProbe } from './health/readiness.js'
import { startLocalServices, type LocalServices } from './local/local-services.js'
import { createLogger, type Logger } from './logger.js'
import { ServiceMetrics } from './metrics/service-metrics.js'
import { ManagedStorage } from './files/managed-storage.js'
import { buildRepositories } from './repositories.js'
import { apiRole } from './roles/api.js'
import type { Role, RoleContext, ServiceParts } from './roles/role.js'
import { webhooksRole } from './roles/webhooks.js'
import { workerRole } from './roles/worker.js'
import { buildServer, listenUntilSignalled } from './server.js'

/**
 * Local mode (EXECUTOR=local) starts a server for each service URL left
 * unset, and a key. The webhook deliverer alone never does: it delivers the
 * completions of a service that runs elsewhere, so it must be told where.
 */
function servicesFor(config: Config, logger: Logger): Promise<LocalServices> {
  const delivererAlone = config.roles.length === 1 && config.roles[0] === 'webhooks'
  if (config.executor === 'local' && !delivererAlone) return startLocalServices(config, logger)
  const resolved = requireExternalServices(config, delivererAlone ? 'the webhook deliverer' : 'ffkube outside local mode')
  return Promise.resolve({ config: resolved, stop: async () => {} })
}

/** Each probe once, though several roles depend on the same service. */
function probesOf(roles: readonly Role[]): ReadinessProbe[] {
  return [...new Set(roles.flatMap((role) => role.probes))]
}

/**
 * Runs the roles `config.roles` names until SIGINT/SIGTERM. main() below
 * passes no `parts`; test/e2e/unpoliced-service.ts does.
 */
export async function runRoles(config: Config, logger: Logger, parts: ServiceParts = {}): Promise<void> {
  const local = await servicesFor(config, logger)
  const resolved = local.config
  const cleanups: (() => Promise<void>)[] = [() => local.stop()]
  const cleanUp = async () => {
    for (const cleanup of cleanups.reverse()) await cleanup()
  }
  try {
    const connections = await openConnections({
      mongodbUrl: resolved.mongodbUrl!,
      mongodbDatabase: resolved.mongodbDatabase,
      natsUrl: resolved.natsUrl!,
      natsCredentials: resolved.natsCredentials,
      s3: resolved.s3,
      name: `ffkube-${config.roles.join('-')}`,
    })
    cleanups.push(() => connections.close())
    // Only local mode owns its bucket.
    if (!config.s3.endpoint) await ensureBucket(connections.s3, resolved.s3.bucket)

    // One feed and one set of repositories for every role of the process: one cache of finished commands,
    // which hears the worker's deletions of outputs (the retention sweep) at once, and other replicas' over NATS.
    // Only an API answers from caches: a process without one only announces.
    const accountChanges = await AccountChanges.open(connections.nats, logger, { listen: config.roles.includes('api') })
    cleanups.push(() => accountChanges.close())
    const secretBox = new SecretBox(parseEncryptionKeys(resolved.encryptionKeys!))
    const metrics = new ServiceMetrics()
    const repositories = buildRepositories({
      db: connections.db,
      storage: new ManagedStorage(connections.s3, connections.s3Bucket),
      secretBox,
      changes: accountChanges,
      storageQuotas: resolved.storageQuotas,
      commandReadMetrics: metrics,
    })
    const context: RoleContext = { config: resolved, connections, repositories, accountChanges, secretBox, logger, metrics }
    const worker = config.roles.includes('worker') ? workerRole(context, parts) : null
    const webhooks = config.roles.includes('webhooks') ? webhooksRole(context) : null
    // Roles in one process nudge each other; in separate processes they poll, except the
    // dispatcher, which a separate API nudges over NATS (it is on every command's path).
    const commandsAccepted = worker?.commandsAccepted ?? (() => publishDispatchNudge(connections.nats))
    const api = config.roles.includes('api')
      ? apiRole(context, { commandsAccepted, filesQueued: worker?.filesQueued, redeliveryQueued: webhooks?.redeliveryQueued, cancelRequested: worker?.cancelRequested }, parts)
      : null
    // Consumers first: the API accepts work once what handles it runs.
    const roles = [worker, webhooks, api].filter((role): role is NonNullable<typeof role> => role !== null)
    const server = await buildServer({ logger, metrics: context.metrics, probes: probesOf(roles), trustProxy: config.trustProxy, ...(api ? { app: api.app } : {}) })
    for (const role of roles) {
      await role.start()
      cleanups.push(() => role.stop())
    }
    await listenUntilSignalled(server, {
      port: config.port,
      host: config.host,
      logger,
      onListening: (baseUrl) => {
        logger.info({ roles: config.roles, url: baseUrl, ...(worker ? { sandbox: worker.sandbox } : {}) }, 'ffkube started')
        api?.announce(baseUrl)
      },
      onClose: cleanUp,
    })
  } catch (err) {
    await cleanUp()
    throw err
  }
}

async function main(): Promise<void> {
  try {
    const config = loadConfig()
    await runRoles(config, createLogger('ffkube', config.logLevel))
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`ffkube: ${err.message}\n`)
      process.exit(2)
    }
    throw err
  }
}

// Run when node starts this file; the test-only entry point imports runRoles instead.
if (process.argv[1] && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((err: unknown) => {
    process.stderr.write(`ffkube failed to start: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`)
    process.exit(1)
  })
}
