import { createHmac } from 'node:crypto'

/**
 * Standard Webhooks 1.0 (https://www.standardwebhooks.com): sent beside the
 * spec's own `X-Webhook-Signature`, so receivers can verify with any of that
 * spec's libraries instead of writing the HMAC check by hand.
 */
export const HEADER_STANDARD_ID = 'webhook-id'
export const HEADER_STANDARD_TIMESTAMP = 'webhook-timestamp'
export const HEADER_STANDARD_SIGNATURE = 'webhook-signature'

const STANDARD_SECRET = /^whsec_((?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?)$/

/**
 * The HMAC key. A secret written the way Standard Webhooks writes them,
 * `whsec_<base64>`, is keyed with the decoded bytes, so `new Webhook(secret)`
 * verifies as it is; any other secret is keyed with its UTF-8 bytes, the same
 * bytes `X-Webhook-Signature` uses (libraries call that the "raw" format).
 */
export function standardWebhookKey(secret: string): Buffer {
  const encoded = STANDARD_SECRET.exec(secret)?.[1]
  return encoded ? Buffer.from(encoded, 'base64') : Buffer.from(secret, 'utf8')
}

/** `v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">`. */
export function signStandardWebhook(input: { id: string; timestampSeconds: number; body: string; secret: string }): string {
  const signed = `${input.id}.${input.timestampSeconds}.${input.body}`
  return `v1,${createHmac('sha256', standardWebhookKey(input.secret)).update(signed).digest('base64')}`
}
