import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import type { TSchema } from 'typebox'
import { webhooksDocument } from '../webhooks/webhook-openapi.js'

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * A request body the document shows but Ajv does not validate: the
     * multipart upload, which the handler reads as a stream.
     */
    documentedBody?: TSchema
  }
}

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
        // 3.1: JSON Schema 2020-12, so `propertyNames` (alias keys) and `type: null` are part of the contract.
        openapi: '3.1.0',
        info: {
          title: 'ffkube media API',
          description: 'FFmpeg and yt-dlp commands over HTTP/JSON. Every /api/v1 route needs the X-API-KEY header.',
          version: '1.0.0',
        },
        components: {
          securitySchemes: {
            apiKey: { type: 'apiKey', in: 'header', name: 'X-API-KEY' },
            // The web console's session (/console/api/session); with it, every POST, PUT, PATCH and DELETE also needs X-CSRF-Token.
            consoleSession: { type: 'apiKey', in: 'cookie', name: 'ffkube_console' },
          },
        },
        security: [{ apiKey: [] }],
        webhooks: webhooksDocument,
      },
      transform: ({ schema, url, route }) => {
        const body = route.config?.documentedBody
        return { schema: body ? { ...schema, body } : schema, url }
      },
    })
    await app.register(swaggerUi, { routePrefix: '/docs' })
    app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger())
  },
  { name: 'openapi' },
)
