import { CommandPollResponse } from '../commands/schemas.js'
import { signWebhookBody } from './signature.js'
import { stringifyBySchema } from './schema-ordered-json.js'
import { HEADER_STANDARD_ID, HEADER_STANDARD_SIGNATURE, HEADER_STANDARD_TIMESTAMP, signStandardWebhook } from './standard-webhooks.js'

/** The spec's User-Agent, `<SERVICE_NAME>-Webhook/1.0` (DESIGN.md fixes the name). */
export const WEBHOOK_USER_AGENT = 'ffkube-Webhook/1.0'

/** Headers a receiver can rely on; README.md documents each. */
export const HEADER_SIGNATURE = 'X-Webhook-Signature'
export const HEADER_DELIVERY_ID = 'X-Webhook-Id'
export const HEADER_TIMESTAMP = 'X-Webhook-Timestamp'
export const HEADER_ATTEMPT = 'X-Webhook-Attempt'

export interface WebhookRequest {
  /** The raw body: serialised once, so the signature covers exactly the bytes sent. */
  body: string
  headers: Record<string, string>
}

/**
 * Builds one webhook POST: `{"data":<poll response>,"timestamp":<ms>}`. The
 * `data` text is the GET poll response's text, so the body is built by
 * concatenation rather than by stringifying a wrapper object.
 */
export function buildWebhookRequest(input: {
  poll: CommandPollResponse
  timestampMs: number
  deliveryId: string
  attempt: number
  secret: string | null
}): WebhookRequest {
  const data = stringifyBySchema(CommandPollResponse, input.poll)
  const body = `{"data":${data},"timestamp":${input.timestampMs}}`
  const timestampSeconds = Math.floor(input.timestampMs / 1000)
  const headers: Record<string, string> = {
    'Content-Type': 'application/json',
    'User-Agent': WEBHOOK_USER_AGENT,
    [HEADER_DELIVERY_ID]: input.deliveryId,
    [HEADER_TIMESTAMP]: String(input.timestampMs),
    [HEADER_ATTEMPT]: String(input.attempt),
    [HEADER_STANDARD_ID]: input.deliveryId,
    [HEADER_STANDARD_TIMESTAMP]: String(timestampSeconds),
  }
  if (input.secret !== null) {
    headers[HEADER_SIGNATURE] = signWebhookBody(body, input.secret)
    headers[HEADER_STANDARD_SIGNATURE] = signStandardWebhook({ id: input.deliveryId, timestampSeconds, body, secret: input.secret })
  }
  return { body, headers }
}
