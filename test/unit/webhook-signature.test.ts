import t from 'tap'
import { createHmac, timingSafeEqual } from 'node:crypto'
import { signWebhookBody } from '../../api/webhooks/webhook-request.js'

/** What a receiver does (docs/api/webhooks.md): recompute and compare in constant time. */
function verifyWebhookSignature(rawBody: string, secret: string, signature: string): boolean {
  const expected = createHmac('sha256', secret).update(rawBody).digest()
  const presented = /^[0-9a-f]{64}$/.test(signature) ? Buffer.from(signature, 'hex') : Buffer.alloc(0)
  return presented.length === expected.length && timingSafeEqual(presented, expected)
}

const body = JSON.stringify({ data: { command_id: 'c', status: 'SUCCESS' }, timestamp: 1767225600000 })

t.test('signs the raw body as lowercase hex HMAC-SHA256, matching an independent computation', async (t) => {
  const independent = createHmac('sha256', Buffer.from('s3cret', 'utf8')).update(Buffer.from(body, 'utf8')).digest().toString('hex')
  const signature = signWebhookBody(body, 's3cret')
  t.equal(signature, independent)
  t.match(signature, /^[0-9a-f]{64}$/)
})

t.test("a receiver's constant-time check accepts the signature, and not under a wrong secret, a changed body or junk", async (t) => {
  const signature = signWebhookBody(body, 's3cret')
  t.ok(verifyWebhookSignature(body, 's3cret', signature))
  t.notOk(verifyWebhookSignature(body, 'other', signature))
  t.notOk(verifyWebhookSignature(body + ' ', 's3cret', signature))
  t.notOk(verifyWebhookSignature(body, 's3cret', signature.toUpperCase()), 'the header is lowercase hex')
  t.notOk(verifyWebhookSignature(body, 's3cret', 'zz'))
})
