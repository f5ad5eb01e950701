import { Type, type Static } from 'typebox'
import { PageOf, PageQuery } from '../pagination.js'

/** One attempt in the delivery log. */
export const WebhookAttempt = Type.Object({
  delivery_id: Type.String({ description: 'the X-Webhook-Id header of the POST; the same on every retry of one delivery' }),
  command_id: Type.String(),
  attempt: Type.Integer({ minimum: 1, maximum: 8 }),
  target: Type.Enum(['account', 'command'], { description: 'account: the account webhook; command: the command\'s own webhook_url' }),
  url: Type.String(),
  outcome: Type.Enum(['success', 'failure']),
  status_code: Type.Union([Type.Integer(), Type.Null()], { description: 'the receiver\'s HTTP status; null when none arrived' }),
  error: Type.Union([Type.String(), Type.Null()], { description: 'why the attempt failed; null on success' }),
  duration_ms: Type.Number(),
  started_at: Type.String({ format: 'date-time' }),
  finished_at: Type.String({ format: 'date-time' }),
})
export type WebhookAttempt = Static<typeof WebhookAttempt>

export const WebhookDeliveriesQuery = Type.Object({
  ...PageQuery.properties,
  command_id: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'only this command\'s attempts' })),
})
export type WebhookDeliveriesQuery = Static<typeof WebhookDeliveriesQuery>

export const WebhookDeliveriesResponse = PageOf('deliveries', WebhookAttempt)

export const RedeliverParams = Type.Object({ commandId: Type.String() })

export const RedeliverResponse = Type.Object({
  delivery_id: Type.String(),
  command_id: Type.String(),
})

export { ErrorResponse } from '../errors/error-response.js'
