import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import type { NatsConnection } from 'nats'
import { systemClock, type Clock } from '../clock.js'
import { RateLimitedError } from '../errors/api-errors.js'
import { RATE_LIMIT_WINDOW_MS, type RateLimits } from './rate-limits.js'
import { ReplicatedCounts } from './replicated-counts.js'
import { retryAfterSeconds } from './window-counter.js'

export interface RateLimitingOptions {
  /** Where the replicas exchange their counts (NATS KV); required unless every limit is 0. */
  nats: NatsConnection | undefined
  limits: RateLimits
  now?: Clock
}

/**
 * Limits requests per API key (never per IP), by the account's plan. Register
 * it after `authentication` in the same scope: it counts against
 * `request.account.keyId`. Answers 429 RATE_LIMITED with Retry-After, the
 * seconds until the key's window ends. Decided from this process's memory;
 * the replicas reconcile their counts in the background (replicated-counts.ts).
 */
export const rateLimiting = fp(
  async (app: FastifyInstance, { nats, limits, now = systemClock }: RateLimitingOptions) => {
    if (Object.values(limits).every((limit) => !limit)) return
    if (!nats) throw new Error('rate limiting needs a NATS connection for its counters (or every limit set to 0)')
    const counts = await ReplicatedCounts.open(nats, { windowMs: RATE_LIMIT_WINDOW_MS, now, log: app.log })
    app.addHook('onClose', () => counts.close())
    app.addHook('onRequest', async (request, reply) => {
      const limit = limits[request.account.plan]
      if (!limit) return
      const at = now()
      const { admitted, count, windowEndsAt } = counts.hit(request.account.keyId, limit, at)
      void reply.header('x-ratelimit-limit', String(limit))
      void reply.header('x-ratelimit-remaining', String(Math.max(0, limit - count)))
      if (!admitted) {
        const retryAfter = retryAfterSeconds(windowEndsAt, at)
        throw new RateLimitedError(`rate limit of ${limit} requests per minute for this API key exceeded; retry in ${retryAfter} s`, retryAfter)
      }
    })
  },
  { name: 'rate-limiting' },
)
