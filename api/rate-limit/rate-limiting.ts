import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import type { NatsConnection } from 'nats'
import { systemClock, type Clock } from '../clock.js'
import { RateLimitedError } from '../errors/api-errors.js'
import { RATE_LIMIT_WINDOW_MS, type RateLimits } from './rate-limits.js'
import { retryAfterSeconds, WindowCounter } from './window-counter.js'

export interface RateLimitingOptions {
  /** Where the counters live (NATS KV); required unless every limit is 0. */
  nats: NatsConnection | undefined
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
  async (app: FastifyInstance, { nats, limits, now = systemClock }: RateLimitingOptions) => {
    if (Object.values(limits).every((limit) => !limit)) return
    if (!nats) throw new Error('rate limiting needs a NATS connection for its counters (or every limit set to 0)')
    const counter = await WindowCounter.open(nats, RATE_LIMIT_WINDOW_MS)
    app.addHook('onRequest', async (request, reply) => {
      const limit = limits[request.account.plan]
      if (!limit) return
      const at = now()
      let hit
      try {
        hit = await counter.hit(request.account.keyId, at)
      } catch (error) {
        // A counter outage must not take the API down with it: let the request in and say so.
        request.log.warn({ err: error, account_id: request.account.id }, 'rate-limit counter unavailable; request not counted')
        return
      }
      const { count, windowEndsAt } = hit
      void reply.header('x-ratelimit-limit', String(limit))
      void reply.header('x-ratelimit-remaining', String(Math.max(0, limit - count)))
      if (count > limit) {
        const retryAfter = retryAfterSeconds(windowEndsAt, at)
        throw new RateLimitedError(`rate limit of ${limit} requests per minute for this API key exceeded; retry in ${retryAfter} s`, retryAfter)
      }
    })
  },
  { name: 'rate-limiting' },
)
