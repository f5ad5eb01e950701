import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { Clock } from '../clock.js'
import { errorResponses } from '../errors/error-response.js'
import { accountUsage } from './account-usage.js'
import { DEFAULT_USAGE_DAYS, UsageQuery, UsageResponse } from './schemas.js'

/** GET /usage: the account's commands, processing seconds and managed storage, by UTC day. */
export const usageRoutes: FastifyPluginAsyncTypebox<{ now: Clock }> = async (app, { now }) => {
  app.get(
    '/usage',
    {
      schema: {
        tags: ['account'],
        summary: "The account's usage by UTC day",
        description:
          "Commands by the day they were submitted, with the seconds they ran; bytes and files in managed storage at the end of each day; and the bytes stored now against the plan's storage quota.",
        querystring: UsageQuery,
        response: { 200: UsageResponse, ...errorResponses(400) },
      },
    },
    async (request) => accountUsage(app, request.account.id, now(), request.query.days ?? DEFAULT_USAGE_DAYS),
  )
}
