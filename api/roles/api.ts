import { ensureLocalBusinessKey } from '../accounts/local-business-key.js'
import type { AppOptions } from '../app.js'
import { isExecutable, resolveTool } from '../executors/tool-paths.js'
import type { Role, RoleContext, ServiceParts } from './role.js'

/** The api role: what server.ts serves, and what the process prints once it listens. */
export interface ApiRole extends Role {
  /** The HTTP API's options, for server.ts to register app.ts with. */
  app: AppOptions
  /** Prints the base URL and, in local mode, the ready-to-use key (DESIGN.md: `npm start`'s output). */
  announce(baseUrl: string): void
}

/** Where the API hands new work to the other roles of its process (each absent when another process runs it). */
export interface ApiNudges {
  commandsAccepted?: () => void
  filesQueued?: () => void
  redeliveryQueued?: () => void
  cancelRequested?: () => void
}

/**
 * The HTTP API. A worker or deliverer in another process finds new work by
 * polling, so the nudges only shorten the wait when they share this process.
 */
export function apiRole({ config, connections, repositories, accountChanges, secretBox, metrics }: RoleContext, nudges: ApiNudges, parts: ServiceParts = {}): ApiRole {
  // Checked once: a yt-dlp installed later is seen on the next start. In local
  // mode runners run on this host; on a cluster they run in the runner image, which has one.
  const ytdlp = config.executor === 'local' ? isExecutable(resolveTool('yt-dlp')) : true
  let localKey: string | null = null
  return {
    probes: [connections.probes.mongodb, connections.probes.nats, connections.probes.storage],
    app: {
      db: connections.db,
      secretBox,
      repositories,
      accountChanges,
      rateLimits: config.rateLimits,
      signInFailuresPerMinute: config.consoleSignInFailuresPerMinute,
      nats: connections.nats,
      allowPrivateNetworks: config.allowPrivateNetworks,
      s3: connections.s3,
      s3Bucket: connections.s3Bucket,
      onCommandsAccepted: nudges.commandsAccepted,
      onFilesQueued: nudges.filesQueued,
      onWebhookRedeliveryQueued: nudges.redeliveryQueued,
      onCancelRequested: nudges.cancelRequested,
      commandLimits: config.commandLimits,
      retentionDays: config.retentionDays,
      ytdlpAvailable: () => ytdlp,
      eventStreamMetrics: metrics,
      eventStreamsPerAccount: config.eventStreamsPerAccount,
      eventStreamLifetimeMs: config.eventStreamMaxSeconds * 1000,
      ...(parts.ffmpegPlanner ? { ffmpegPlanner: parts.ffmpegPlanner } : {}),
    },
    async start() {
      // An API on a cluster never makes or prints a key.
      if (config.executor === 'local') localKey = (await ensureLocalBusinessKey(repositories.accounts, config.dataDir)).api_key
    },
    async stop() {},
    announce(baseUrl) {
      process.stdout.write(`ffkube is listening on ${baseUrl}\n`)
      if (localKey) process.stdout.write(`API key (business plan): ${localKey}\n`)
      process.stdout.write(`Console: ${baseUrl}/console/ (sign in with an API key, or: npm run -s admin -- console-link --account ID)\n`)
    },
  }
}
