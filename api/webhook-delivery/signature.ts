import { createHmac, timingSafeEqual } from 'node:crypto'

/** `X-Webhook-Signature`: lowercase hex HMAC-SHA256 of the raw body, keyed with the secret. */
export function signWebhookBody(rawBody: string | Buffer, secret: string): string {
  return createHmac('sha256', secret).update(rawBody).digest('hex')
}

/** What a receiver does: recompute and compare in constant time. */
export function verifyWebhookSignature(rawBody: string | Buffer, secret: string, signature: string): boolean {
  const expected = Buffer.from(signWebhookBody(rawBody, secret), 'hex')
  const presented = /^[0-9a-f]{64}$/.test(signature) ? Buffer.from(signature, 'hex') : Buffer.alloc(0)
  return presented.length === expected.length && timingSafeEqual(presented, expected)
}
