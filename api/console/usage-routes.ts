import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { Clock } from '../clock.js'
import { errorResponses } from '../errors/error-response.js'
import { accountUsage } from '../usage/account-usage.js'
import { UsageResponse } from '../usage/schemas.js'
import type { ConsoleAuth } from './console-auth.js'
import { requireConsoleSession } from './session-routes.js'

/** The usage page's window. */
export const USAGE_DAYS = 30

/** GET /console/api/usage: what GET /api/v1/usage?days=30 answers, for the session's account. */
export const consoleUsageRoutes: FastifyPluginAsyncTypebox<{ consoleAuth: ConsoleAuth; now: Clock }> = async (app, { consoleAuth, now }) => {
  app.addHook('onRequest', requireConsoleSession(consoleAuth))

  app.get(
    '/usage',
    {
      schema: {
        summary: "The account's usage by UTC day over the last 30 days, and its storage against the quota",
        tags: ['console'],
        security: [{ consoleSession: [] }],
        response: { 200: UsageResponse, ...errorResponses(401, 403) },
      },
    },
    async (request) => accountUsage(app, request.consoleCaller.account.id, now(), USAGE_DAYS),
  )
}
