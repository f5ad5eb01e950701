import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import type { S3Client } from '@aws-sdk/client-s3'
import type { Db } from 'mongodb'
import type { NatsConnection } from 'nats'
import type { FfmpegPlanner } from '../contracts/ffmpeg-plan.js'
import { AccountChanges } from './accounts/account-changes.js'
import { authentication } from './accounts/authentication.js'
import { KeyCache } from './accounts/key-cache.js'
import type { SecretBox } from './crypto/secret-box.js'
import { ConsoleAuth } from './console/console-auth.js'
import { consolePlugin } from './console/console-plugin.js'
import { DEFAULT_SIGN_IN_FAILURES_PER_MINUTE, SignInThrottle } from './console/sign-in-throttle.js'
import { errorHandler } from './errors/error-handler.js'
import { finiteNumbers } from './errors/finite-numbers.js'
import { answerUnmatchedRequests } from './errors/route-table.js'
import { commandSubmission } from './commands/command-submission.js'
import { commandRoutes } from './commands/routes.js'
import type { CommandLimitsByPlan } from './commands/command-limits.js'
import { commandEventRoutes } from './commands/event-stream.js'
import { commandLogRoutes } from './logs/routes.js'
import type { CommandReadRecorder, EventStreamRecorder } from './metrics/service-metrics.js'
import { ManagedStorage } from './files/managed-storage.js'
import type { StorageQuotas } from './files/storage-quota.js'
import { buildRepositories, repositoriesPlugin, type Repositories } from './repositories.js'
import { fileRoutes } from './files/routes.js'
import type { RetentionDaysByPlan } from './files/retention.js'
import { presetRoutes } from './presets/routes.js'
import { systemClock, type Clock } from './clock.js'
import { addCommonErrorResponses } from './openapi/common-responses.js'
import { openApi } from './openapi/openapi.js'
import { rateLimiting } from './rate-limit/rate-limiting.js'
import { DEFAULT_RATE_LIMITS, type RateLimits } from './rate-limit/rate-limits.js'
import { storageDestinationRoutes } from './storage-destinations/routes.js'
import { usageRoutes } from './usage/routes.js'
import { webhookConfigRoutes } from './webhooks/config-routes.js'
import { ytdlpCookieRoutes } from './ytdlp-cookies/routes.js'
import { webhookDeliveryRoutes } from './webhooks/delivery-routes.js'
import { strictJsonBodies } from './validation/json-body.js'

/** What the HTTP API needs from the process that hosts it. */
export interface AppOptions {
  db: Db
  secretBox: SecretBox
  /**
   * The process's repositories and the account-change feed they announce on,
   * given together by api/main.ts, which built them once for every role; a
   * test that builds the app alone leaves both unset and the app builds its own.
   */
  repositories?: Repositories
  accountChanges?: AccountChanges
  /** Requests per minute per API key by plan (config.rateLimits); DEFAULT_RATE_LIMITS when unset. */
  rateLimits?: RateLimits
  /** Holds the rate-limit counters (KV); needed unless every rate limit is 0. Without it console sign-ins are not limited. */
  nats?: NatsConnection
  /** Failed console sign-ins per minute per client address (config.consoleSignInFailuresPerMinute); 10 when unset, 0 = no limit. */
  signInFailuresPerMinute?: number
  /** ALLOW_PRIVATE_NETWORKS: lets destination endpoints and webhook URLs reach loopback; false when unset. */
  allowPrivateNetworks?: boolean
  /** The time rate-limit windows and timestamps use; injected by tests. */
  clock?: Clock
  /** The managed bucket's client and name: uploads and managed outputs (read when the app builds its own repositories). */
  s3: S3Client
  s3Bucket: string
  /** Called after commands are recorded: the in-process dispatcher's nudge. */
  onCommandsAccepted?: () => void
  /** Called after an upload or store-file request is queued: the in-process file processor's nudge. */
  onFilesQueued?: () => void
  /** Called after a webhook redelivery is queued: the in-process webhook deliverer's nudge. */
  onWebhookRedeliveryQueued?: () => void
  /** False when this host cannot run yt-dlp: the yt-dlp endpoints answer 501. Unset: available. */
  ytdlpAvailable?: () => boolean
  /** Per-plan defaults and maximums of the command limits (config.commandLimits); DEFAULT_COMMAND_LIMITS when unset. */
  commandLimits?: CommandLimitsByPlan
  /** Per-plan storage quotas (config.storageQuotas) of the app's own repositories; DEFAULT_STORAGE_QUOTAS when unset. */
  storageQuotas?: StorageQuotas
  /** Days each plan keeps managed files, and the most a command may ask (config.retentionDays); DEFAULT_RETENTION_DAYS when unset. */
  retentionDays?: RetentionDaysByPlan
  /** Called after a cancel was recorded: the in-process canceller's nudge. */
  onCancelRequested?: () => void
  /** What plans run-ffmpeg-command's strings (contracts/ffmpeg-plan.ts); the policy's planFfmpegCommands when unset, as api/main.ts always leaves it. */
  ffmpegPlanner?: FfmpegPlanner
  /** Where the app's own repositories report whether GET /commands/:id answered from the cache of finished commands (/metrics); unset in most tests. */
  commandReadMetrics?: CommandReadRecorder
  /** Where the event streams report how many are open (/metrics); unset in most tests. */
  eventStreamMetrics?: EventStreamRecorder
  /** Event streams one account may hold open on this process at once (config.eventStreamsPerAccount); 32 when unset. */
  eventStreamsPerAccount?: number
  /** How long an event stream lives before it is ended with a reconnect hint (config.eventStreamMaxSeconds, in ms); 1 h when unset. */
  eventStreamLifetimeMs?: number
  /** The console's built bundle (scripts/build-console.sh); dist/console when unset. */
  consoleDir?: string
}

/** The feed of an app built alone, closed with it. */
async function openAccountChanges(app: FastifyInstance, nats: NatsConnection | undefined): Promise<AccountChanges> {
  const changes = await AccountChanges.open(nats, app.log)
  app.addHook('onClose', () => changes.close())
  return changes
}

/**
 * The HTTP API (`/api/v1`, `/openapi.json`, `/docs`) and the web console
 * (`/console/`, `/console/api`) as a plugin: the
 * repositories and cross-cutting plugins first, then one route plugin per
 * resource folder. server.ts registers it; fastify-plugin keeps its error
 * handler and decorators (`app.accounts`, …) on the server itself.
 */
export const appPlugin = fp(
  async (app: FastifyInstance, deps: AppOptions) => {
    await app.register(errorHandler)
    await app.register(strictJsonBodies)
    // Before every route: @fastify/swagger documents routes as they are added.
    await app.register(openApi)
    const clock = deps.clock ?? systemClock
    const allowPrivateNetworks = deps.allowPrivateNetworks ?? false

    const accountChanges = deps.accountChanges ?? (await openAccountChanges(app, deps.nats))
    const repositories =
      deps.repositories ??
      buildRepositories({
        db: deps.db,
        storage: new ManagedStorage(deps.s3, deps.s3Bucket),
        secretBox: deps.secretBox,
        changes: accountChanges,
        now: clock,
        storageQuotas: deps.storageQuotas,
        commandReadMetrics: deps.commandReadMetrics,
      })
    const { accounts, sessions, signInLinks } = repositories
    const keys = new KeyCache((apiKey) => accounts.authenticate(apiKey), { now: clock })
    accountChanges.listen(keys)
    await app.register(repositoriesPlugin, { repositories })
    await app.register(commandSubmission, { now: clock, onCommandsAccepted: deps.onCommandsAccepted, allowPrivateNetworks, limits: deps.commandLimits, retentionDays: deps.retentionDays })
    const consoleAuth = new ConsoleAuth(sessions, accounts, clock)
    const rateLimits = deps.rateLimits ?? DEFAULT_RATE_LIMITS
    const signInThrottle = await SignInThrottle.open({ nats: deps.nats, limit: deps.signInFailuresPerMinute ?? DEFAULT_SIGN_IN_FAILURES_PER_MINUTE, now: clock, log: app.log })
    await app.register(consolePlugin, { consoleAuth, sessions, signInLinks, signInThrottle, rateLimits, now: clock, dir: deps.consoleDir })

    await app.register(
      async (v1) => {
        // X-API-KEY, or the console's session cookie (with its CSRF token on a change).
        await v1.register(authentication, { keys, consoleAuth })
        // After authentication: limits count per API key.
        await v1.register(rateLimiting, { nats: deps.nats, limits: rateLimits, now: clock })
        await v1.register(finiteNumbers)
        // Every route below documents the statuses any route can answer with, and is recorded for 405s.
        v1.addHook('onRoute', addCommonErrorResponses)
        // Unknown /api/v1 paths go through authentication too, so they do not reveal the route table.
        answerUnmatchedRequests(v1)
        // Resource route plugins register here, one per folder under api/.
        await v1.register(storageDestinationRoutes, { allowPrivateNetworks })
        await v1.register(webhookConfigRoutes, { allowPrivateNetworks })
        await v1.register(webhookDeliveryRoutes, { now: clock, onRedeliveryQueued: deps.onWebhookRedeliveryQueued })
        await v1.register(commandRoutes, { ytdlpAvailable: deps.ytdlpAvailable, ffmpegPlanner: deps.ffmpegPlanner, now: clock, onCancelRequested: deps.onCancelRequested })
        await v1.register(commandEventRoutes, { metrics: deps.eventStreamMetrics, nats: deps.nats, streamsPerAccount: deps.eventStreamsPerAccount, lifetimeMs: deps.eventStreamLifetimeMs })
        await v1.register(commandLogRoutes)
        await v1.register(fileRoutes, { now: clock, retentionDays: deps.retentionDays, onQueued: deps.onFilesQueued })
        await v1.register(presetRoutes)
        await v1.register(usageRoutes, { now: clock })
        await v1.register(ytdlpCookieRoutes)
      },
      { prefix: '/api/v1' },
    )
  },
  { name: 'ffkube-api' },
)
