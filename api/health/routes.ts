import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { runProbes, type ReadinessProbe } from './readiness.js'

const PROBE_TIMEOUT_MS = 2_000

const Checks = Type.Record(Type.String(), Type.Union([Type.Literal('ok'), Type.Literal('unavailable')]))

/**
 * Health endpoints outside /api/v1 and without auth, for kubelet probes:
 * /healthz says the process is alive, /readyz that its dependencies answer.
 * Failures are logged with their cause but answered without it, since the
 * endpoint is unauthenticated.
 */
export const healthRoutes: FastifyPluginAsyncTypebox<{ probes: readonly ReadinessProbe[] }> = async (app, { probes }) => {
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
          200: Type.Object({ status: Type.Literal('ready'), checks: Checks }),
          503: Type.Object({ status: Type.Literal('unavailable'), checks: Checks }),
        },
      },
    },
    async (request, reply) => {
      const checks = await runProbes(probes, PROBE_TIMEOUT_MS, (name, err) =>
        request.log.warn({ probe: name, err }, 'readiness probe failed'),
      )
      const ready = Object.values(checks).every((result) => result === 'ok')
      return ready ? { status: 'ready' as const, checks } : reply.code(503).send({ status: 'unavailable' as const, checks })
    },
  )
}
