import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'

/**
 * OpenAPI 3 generated from the routes' TypeBox schemas: the document at
 * /openapi.json and a browsable page at /docs, both without an API key.
 * Registered before any route, since @fastify/swagger collects routes as they
 * are added.
 */
export const openApi = fp(
  async (app: FastifyInstance) => {
    await app.register(swagger, {
      openapi: {
        openapi: '3.0.3',
        info: {
          title: 'ffkube media API',
          description: 'FFmpeg and yt-dlp commands over HTTP/JSON. Every /api/v1 route needs the X-API-KEY header.',
          version: '1.0.0',
        },
        components: { securitySchemes: { apiKey: { type: 'apiKey', in: 'header', name: 'X-API-KEY' } } },
        security: [{ apiKey: [] }],
      },
    })
    await app.register(swaggerUi, { routePrefix: '/docs' })
    app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger())
  },
  { name: 'openapi' },
)
