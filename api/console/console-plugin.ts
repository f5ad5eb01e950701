import type { FastifyInstance } from 'fastify'
import type { Clock } from '../clock.js'
import { answerUnmatchedRequests } from '../errors/route-table.js'
import type { RateLimits } from '../rate-limit/rate-limits.js'
import type { ConsoleAuth } from './console-auth.js'
import { consoleKeyRoutes } from './key-routes.js'
import { consoleStatic } from './console-static.js'
import type { SessionRepository } from './session-repository.js'
import { consoleSessionRoutes } from './session-routes.js'
import type { SignInLinkRepository } from './sign-in-link-repository.js'
import type { SignInThrottle } from './sign-in-throttle.js'
import { consoleUsageRoutes } from './usage-routes.js'

export interface ConsoleOptions {
  consoleAuth: ConsoleAuth
  sessions: SessionRepository
  signInLinks: SignInLinkRepository
  /** Bounds failed sign-ins per client address. */
  signInThrottle: SignInThrottle
  rateLimits: RateLimits
  now: Clock
  /** The built bundle; dist/console when unset. */
  dir?: string | undefined
}

/**
 * The web console: its bundle at /console/, and its own endpoints under
 * /console/api (session, keys, usage), which only a console session reaches.
 * Everything else it shows it reads from /api/v1 with the same session.
 */
export async function consolePlugin(app: FastifyInstance, options: ConsoleOptions): Promise<void> {
  await app.register(consoleStatic, { dir: options.dir })
  await app.register(
    async (api) => {
      // Answers hold keys and tokens: never cached, anywhere.
      api.addHook('onSend', async (_request, reply) => {
        void reply.header('cache-control', 'no-store')
      })
      // As /api/v1 does: 405 with Allow for a known path, whatever the method and body.
      answerUnmatchedRequests(api)
      await api.register(consoleSessionRoutes, options)
      await api.register(consoleKeyRoutes, { consoleAuth: options.consoleAuth, now: options.now })
      await api.register(consoleUsageRoutes, { consoleAuth: options.consoleAuth, now: options.now })
    },
    { prefix: '/console/api' },
  )
}
