import type { FastifyDynamicSwaggerOptions } from '@fastify/swagger'
import { Type } from 'typebox'
import { CommandPollResponse } from '../commands/schemas.js'
import {
  HEADER_ATTEMPT,
  HEADER_DELIVERY_ID,
  HEADER_SIGNATURE,
  HEADER_STANDARD_ID,
  HEADER_STANDARD_SIGNATURE,
  HEADER_STANDARD_TIMESTAMP,
  HEADER_TIMESTAMP,
} from './webhook-request.js'

/** The body of every webhook POST: the GET poll response and the dispatch time in ms. */
export const WebhookPayload = Type.Object({
  data: CommandPollResponse,
  timestamp: Type.Integer({ description: 'Unix time in milliseconds when this attempt was sent' }),
})

const header = (name: string, description: string, required = true) => ({ name, in: 'header', required, description, schema: { type: 'string' as const } })

type OpenApiDocument = NonNullable<FastifyDynamicSwaggerOptions['openapi']>
/** The `webhooks` of the document versions that have them (3.1 on). */
type WebhooksOf<T> = T extends { webhooks?: infer W } ? (unknown extends W ? never : NonNullable<W>) : never

/** OpenAPI 3.1's `webhooks`: what ffkube POSTs to a receiver (docs/api/webhooks.md tells the rest). */
export const webhooksDocument: WebhooksOf<OpenApiDocument> = {
  commandCompleted: {
    post: {
      summary: 'A command reached SUCCESS or FAILED',
      description: 'Sent to the command\'s `webhook_url`, or else to the account webhook. Any 2xx within the timeout is a success; anything else is retried (5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h).',
      parameters: [
        header('User-Agent', '`ffkube-Webhook/1.0`'),
        header(HEADER_SIGNATURE, 'Lowercase hex HMAC-SHA256 of the raw body, keyed with the secret; only when a secret is set', false),
        header(HEADER_DELIVERY_ID, 'The delivery id: the same on every retry'),
        header(HEADER_TIMESTAMP, 'The body\'s `timestamp` (ms)'),
        header(HEADER_ATTEMPT, '1 to 8'),
        header(HEADER_STANDARD_ID, 'Standard Webhooks 1.0: the delivery id, as X-Webhook-Id'),
        header(HEADER_STANDARD_TIMESTAMP, 'Standard Webhooks 1.0: the dispatch time in whole seconds'),
        header(HEADER_STANDARD_SIGNATURE, 'Standard Webhooks 1.0: `v1,<base64 HMAC-SHA256 of "{webhook-id}.{webhook-timestamp}.{body}">`; only when a secret is set', false),
      ],
      // TypeBox writes JSON Schema 2020-12, OpenAPI 3.1's own dialect; only the TypeScript types differ.
      requestBody: { required: true, content: { 'application/json': { schema: WebhookPayload as never } } },
      responses: { '2XX': { description: 'Delivered. Any other answer, or none within the timeout, fails the attempt.' } },
    },
  },
}
