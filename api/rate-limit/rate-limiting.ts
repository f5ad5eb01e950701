import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import type { Db } from 'mongodb'
import { systemClock, type Clock } from '../clock.js'
import { RateLimitedError } from '../errors/api-errors.js'
import { RATE_LIMIT_WINDOW_MS, type RateLimits } from './rate-limits.js'
import { WindowCounter } from './window-counter.js'

export interface RateLimitingOptions {
  db: Db
  limits: RateLimits
  now?: Clock
}

/**
 * Limits requests per API key (never per IP), by the account's plan. Register
 * it after `authentication` in the same scope: it counts against
 * `request.account.keyId`. Answers 429 RATE_LIMITED with Retry-After, the
 * seconds until the key's window ends.
 */
export const rateLimiting = fp(
  async (app: FastifyInstance, { db, limits, now = systemClock }: RateLimitingOptions) => {
    const counter = new WindowCounter(db, RATE_LIMIT_WINDOW_MS)
    await counter.ensureIndexes()
    app.addHook('onRequest', async (request, reply) => {
      const limit = limits[request.account.plan]
      if (!limit) return
      const at = now()
      const { count, windowEndsAt } = await counter.hit(request.account.keyId, at)
      void reply.header('x-ratelimit-limit', String(limit))
      void reply.header('x-ratelimit-remaining', String(Math.max(0, limit - count)))
      if (count > limit) {
        const retryAfterSeconds = Math.max(1, Math.ceil((windowEndsAt - at.getTime()) / 1000))
        throw new RateLimitedError(`rate limit of ${limit} requests per minute for this API key exceeded; retry in ${retryAfterSeconds} s`, retryAfterSeconds)
      }
    })
  },
  { name: 'rate-limiting' },
)
