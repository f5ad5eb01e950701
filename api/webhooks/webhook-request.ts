/**
 * One webhook POST: its body, its headers and its two signatures, the spec's
 * `X-Webhook-Signature` and, beside it, Standard Webhooks 1.0's
 * (https://www.standardwebhooks.com), so receivers can verify with any of
 * that spec's libraries instead of writing the HMAC check by hand.
 */
import { createHmac } from 'node:crypto'
import { stringifyPollResponse, type CommandPollResponse } from '../commands/schemas.js'

/** The spec's User-Agent, `<SERVICE_NAME>-Webhook/1.0` (DESIGN.md fixes the name). */
export const WEBHOOK_USER_AGENT = 'ffkube-Webhook/1.0'

/** Headers a receiver can rely on; README.md documents each. */
export const HEADER_SIGNATURE = 'X-Webhook-Signature'
export const HEADER_DELIVERY_ID = 'X-Webhook-Id'
export const HEADER_TIMESTAMP = 'X-Webhook-Timestamp'
export const HEADER_ATTEMPT = 'X-Webhook-Attempt'
export const HEADER_STANDARD_ID = 'webhook-id'
export const HEADER_STANDARD_TIMESTAMP = 'webhook-timestamp'
export const HEADER_STANDARD_SIGNATURE = 'webhook-signature'

const STANDARD_SECRET = /^whsec_((?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?)$/

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
  const data = stringifyPollResponse(input.poll)
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

/** `X-Webhook-Signature`: lowercase hex HMAC-SHA256 of the raw body, keyed with the secret. */
export function signWebhookBody(rawBody: string | Buffer, secret: string): string {
  return createHmac('sha256', secret).update(rawBody).digest('hex')
}

/**
 * Standard Webhooks' HMAC key. A secret written the way Standard Webhooks
 * writes them, `whsec_<base64>`, is keyed with the decoded bytes, so
 * `new Webhook(secret)` verifies as it is; any other secret is keyed with its
 * UTF-8 bytes, the same bytes `X-Webhook-Signature` uses (libraries call that
 * the "raw" format).
 */
function standardWebhookKey(secret: string): Buffer {
  const encoded = STANDARD_SECRET.exec(secret)?.[1]
  return encoded ? Buffer.from(encoded, 'base64') : Buffer.from(secret, 'utf8')
}

/** `webhook-signature`: `v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">`. */
function signStandardWebhook(input: { id: string; timestampSeconds: number; body: string; secret: string }): string {
  const signed = `${input.id}.${input.timestampSeconds}.${input.body}`
  return `v1,${createHmac('sha256', standardWebhookKey(input.secret)).update(signed).digest('base64')}`
}
