import t from 'tap'
import { createHmac } from 'node:crypto'
import { signWebhookBody, verifyWebhookSignature } from '../../api/webhook-delivery/signature.js'

const body = JSON.stringify({ data: { command_id: 'c', status: 'SUCCESS' }, timestamp: 1767225600000 })

t.test('signs the raw body as lowercase hex HMAC-SHA256, matching an independent computation', async (t) => {
  const independent = createHmac('sha256', Buffer.from('s3cret', 'utf8')).update(Buffer.from(body, 'utf8')).digest().toString('hex')
  const signature = signWebhookBody(body, 's3cret')
  t.equal(signature, independent)
  t.match(signature, /^[0-9a-f]{64}$/)
})

t.test('verifies a correct signature and refuses a wrong secret, a changed body or junk', async (t) => {
  const signature = signWebhookBody(body, 's3cret')
  t.ok(verifyWebhookSignature(body, 's3cret', signature))
  t.notOk(verifyWebhookSignature(body, 'other', signature))
  t.notOk(verifyWebhookSignature(body + ' ', 's3cret', signature))
  t.notOk(verifyWebhookSignature(body, 's3cret', signature.toUpperCase()), 'the header is lowercase hex')
  t.notOk(verifyWebhookSignature(body, 's3cret', 'zz'))
})
