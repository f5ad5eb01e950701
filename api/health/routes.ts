import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { ReadinessLatch, type ReadinessProbe } from './readiness.js'

const PROBE_TIMEOUT_MS = 2_000

const Checks = Type.Record(Type.String(), Type.Union([Type.Literal('ok'), Type.Literal('unavailable')]))

/**
 * Health endpoints outside /api/v1 and without auth, for kubelet probes:
 * /healthz says the process is alive; /readyz reports each dependency and
 * answers 503 until every one has answered this process once, then 200
 * (`degraded` while one does not answer: ReadinessLatch says why).
 * Failures are logged with their cause but answered without it, since the
 * endpoint is unauthenticated.
 */
export const healthRoutes: FastifyPluginAsyncTypebox<{ probes: readonly ReadinessProbe[] }> = async (app, { probes }) => {
  const latch = new ReadinessLatch(probes)
  app.get(
    '/healthz',
    { schema: { hide: true, response: { 200: Type.Object({ status: Type.Literal('ok') }) } } },
    async () => ({ status: 'ok' as const }),
  )

  app.get(
    '/readyz',
    {
      schema: {
        hide: true,
        response: {
          200: Type.Object({ status: Type.Union([Type.Literal('ready'), Type.Literal('degraded')]), checks: Checks }),
          503: Type.Object({ status: Type.Literal('unavailable'), checks: Checks }),
        },
      },
    },
    async (request, reply) => {
      const { ready, checks } = await latch.evaluate(PROBE_TIMEOUT_MS, (name, err) =>
        request.log.warn({ probe: name, err }, 'readiness probe failed'),
      )
      if (!ready) return reply.code(503).send({ status: 'unavailable' as const, checks })
      const degraded = Object.values(checks).some((result) => result !== 'ok')
      return { status: degraded ? ('degraded' as const) : ('ready' as const), checks }
    },
  )
}
