import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import type { ServiceMetrics } from './service-metrics.js'

/**
 * GET /metrics (Prometheus text format, no auth, outside /api/v1 like the
 * health endpoints: keep it off public ingress) and the hook that times every
 * request by its route pattern. Unmatched URLs count under `unmatched`.
 */
export const metricsRoutes = fp(
  async (app: FastifyInstance, { metrics }: { metrics: ServiceMetrics }) => {
    app.addHook('onResponse', async (request, reply) => {
      metrics.httpRequest(request.method, request.routeOptions.url ?? 'unmatched', reply.statusCode, reply.elapsedTime / 1000)
    })
    app.get('/metrics', { schema: { hide: true } }, async (_request, reply) => {
      void reply.header('content-type', metrics.registry.contentType)
      return metrics.registry.metrics()
    })
  },
  { name: 'metrics-routes' },
)
