import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import type { Db } from 'mongodb'
import { systemClock, type Clock } from './clock.js'
import { AccountRepository, planReader } from './accounts/account-repository.js'
import type { AccountChanges } from './accounts/account-changes.js'
import { cachedPlans } from './accounts/plan-cache.js'
import { CommandRepository } from './commands/command-repository.js'
import { SessionRepository } from './console/session-repository.js'
import { SignInLinkRepository } from './console/sign-in-link-repository.js'
import type { SecretBox } from './crypto/secret-box.js'
import { FileRepository } from './files/file-repository.js'
import type { ManagedStorage } from './files/managed-storage.js'
import { DEFAULT_STORAGE_QUOTAS, StorageQuota, type StorageQuotas } from './files/storage-quota.js'
import { CommandLogRepository } from './logs/command-log-repository.js'
import type { CommandReadRecorder } from './metrics/service-metrics.js'
import { PresetRepository } from './presets/preset-repository.js'
import { StorageDestinationRepository } from './storage-destinations/storage-destination-repository.js'
import { WebhookConfigRepository } from './webhooks/webhook-config-repository.js'
import { AttemptLog } from './webhooks/attempt-log.js'
import { DeliveryRepository } from './webhooks/delivery-repository.js'
import { YtdlpCookieRepository } from './ytdlp-cookies/ytdlp-cookie-repository.js'

/**
 * Every repository of one process, built once: at the composition root
 * (api/main.ts), which hands them to each role and to the app, or by the app
 * itself when a test builds it alone. One instance each, so the state some
 * hold (the cache of finished commands, the dispatcher's reads of due
 * commands, the batching of submissions) is the process's one copy. Tests may
 * wrap one to stage a race from the outside (test/harness/interleaved.ts).
 */
export interface Repositories {
  accounts: AccountRepository
  commands: CommandRepository
  commandLogs: CommandLogRepository
  files: FileRepository
  presets: PresetRepository
  sessions: SessionRepository
  signInLinks: SignInLinkRepository
  storageDestinations: StorageDestinationRepository
  webhookConfigs: WebhookConfigRepository
  webhookDeliveries: DeliveryRepository
  webhookAttempts: AttemptLog
  ytdlpCookies: YtdlpCookieRepository
}

export interface RepositoryParts {
  db: Db
  /** The managed bucket: uploads and managed outputs. */
  storage: ManagedStorage
  /** Seals what the store keeps secret: API keys, credentials, webhook secrets, cookies. */
  secretBox: SecretBox
  /** The process's account-change feed: where writes are announced, and what the cache of finished commands hears. */
  changes?: AccountChanges | undefined
  now?: Clock | undefined
  storageQuotas?: StorageQuotas | undefined
  /** Where GET /commands/:id reports whether it answered from the cache of finished commands (/metrics). */
  commandReadMetrics?: CommandReadRecorder | undefined
}

export function buildRepositories(parts: RepositoryParts): Repositories {
  const { db, secretBox, changes } = parts
  const now = parts.now ?? systemClock
  const commands = new CommandRepository(db, { changes, now, metrics: parts.commandReadMetrics })
  // A command's SUCCESS counts its outputs against its plan's quota: one read of the plan per account per PLAN_CACHE_MS, not per command.
  const quota = new StorageQuota(db, parts.storageQuotas ?? DEFAULT_STORAGE_QUOTAS, cachedPlans(planReader(db), { changes, now }))
  return {
    accounts: new AccountRepository(db, secretBox, changes),
    commands,
    commandLogs: new CommandLogRepository(db),
    files: new FileRepository(db, parts.storage, commands, now, quota),
    presets: new PresetRepository(db, now),
    sessions: new SessionRepository(db),
    signInLinks: new SignInLinkRepository(db),
    storageDestinations: new StorageDestinationRepository(db, secretBox, now),
    webhookConfigs: new WebhookConfigRepository(db, secretBox, now),
    webhookDeliveries: new DeliveryRepository(db),
    webhookAttempts: new AttemptLog(db),
    ytdlpCookies: new YtdlpCookieRepository(db, secretBox, now),
  }
}

declare module 'fastify' {
  /** The repositories the routes read, as repositoriesPlugin decorates them (the console's two it hands over itself). */
  // eslint-disable-next-line @typescript-eslint/no-empty-object-type -- declaration merging: the extends clause is what it adds
  interface FastifyInstance extends RoutedRepositories {}
}

type RoutedRepositories = Omit<Repositories, 'sessions' | 'signInLinks'>

/**
 * Decorates the app with the repositories its routes read (`app.commands`,
 * …), after making sure of their indexes and seeding the system presets.
 */
export const repositoriesPlugin = fp(
  async (app: FastifyInstance, { repositories }: { repositories: Repositories }) => {
    const { accounts, commands, commandLogs, files, presets, sessions, signInLinks, storageDestinations, webhookConfigs, webhookDeliveries, webhookAttempts, ytdlpCookies } = repositories
    await accounts.ensureIndexes()
    await storageDestinations.ensureIndexes()
    await commands.ensureIndexes()
    await files.ensureIndexes()
    await presets.ensureIndexes()
    await presets.seedSystemPresets()
    await Promise.all([sessions.ensureIndexes(), signInLinks.ensureIndexes()])
    app.decorate('accounts', accounts)
    app.decorate('commands', commands)
    app.decorate('commandLogs', commandLogs)
    app.decorate('files', files)
    app.decorate('presets', presets)
    app.decorate('storageDestinations', storageDestinations)
    app.decorate('webhookConfigs', webhookConfigs)
    app.decorate('webhookDeliveries', webhookDeliveries)
    app.decorate('webhookAttempts', webhookAttempts)
    app.decorate('ytdlpCookies', ytdlpCookies)
  },
  { name: 'repositories' },
)
