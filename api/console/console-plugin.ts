import type { FastifyInstance } from 'fastify'
import { answerUnmatchedRequests } from '../errors/route-table.js'
import { consoleKeyRoutes } from './key-routes.js'
import { consoleStatic } from './console-static.js'
import { consoleSessionRoutes, type ConsoleRouteOptions } from './session-routes.js'
import { consoleUsageRoutes } from './usage-routes.js'

/** The session routes' options, and where the bundle is. */
export interface ConsoleOptions extends ConsoleRouteOptions {
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
