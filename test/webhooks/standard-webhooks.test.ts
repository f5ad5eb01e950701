import { createHmac, randomBytes } from 'node:crypto'
import t from 'tap'
import { Webhook, WebhookVerificationError } from 'standardwebhooks'
import { nextWake, startReceiver, startWorld, until } from './world.js'

/** Standard Webhooks 1.0's signature written from its spec, not from the product's code. */
function referenceSignature(key: Buffer, id: string, timestamp: string, body: string): string {
  return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`
}

function standardHeaders(headers: Record<string, string | string[] | undefined>): Record<string, string> {
  const pick = (name: string): string => {
    const value = headers[name]
    if (typeof value !== 'string') throw new Error(`${name} is missing`)
    return value
  }
  return { 'webhook-id': pick('webhook-id'), 'webhook-timestamp': pick('webhook-timestamp'), 'webhook-signature': pick('webhook-signature') }
}

const generated = `whsec_${randomBytes(32).toString('base64')}`
const secrets = [
  // What Standard Webhooks' own tooling generates: the library takes it as it is.
  { name: 'a whsec_ secret', secret: generated, library: () => new Webhook(generated), key: Buffer.from(generated.slice(6), 'base64') },
  // Any other string is keyed with its UTF-8 bytes, as the spec's X-Webhook-Signature is. The
  // library's raw format takes a string's char codes, not UTF-8, so a receiver hands it bytes.
  { name: 'a plain secret', secret: 'a-long-random-sëcret', library: () => new Webhook(new TextEncoder().encode('a-long-random-sëcret'), { format: 'raw' }), key: Buffer.from('a-long-random-sëcret', 'utf8') },
  { name: 'a whsec_ secret that is not base64', secret: 'whsec_not base64!', library: () => new Webhook('whsec_not base64!', { format: 'raw' }), key: Buffer.from('whsec_not base64!', 'utf8') },
]

for (const { name, secret, library, key } of secrets) {
  t.test(`with ${name}, every delivery carries Standard Webhooks headers that its reference library verifies on the raw body`, async (t) => {
    // The real clock's day: the library refuses timestamps more than five minutes from now.
    const world = await startWorld(t, { startAt: Date.now() })
    const receiver = await startReceiver(t)
    receiver.behave((_req, res) => res.writeHead(receiver.received.length === 1 ? 500 : 204).end())
    const { api_key } = await world.api.createAccount('free')
    await world.putWebhook(api_key, { url: receiver.url, secret })
    await world.deliverer()
    const commandId = await world.submit(api_key)
    await world.complete(commandId)
    const first = await until('the first attempt', () => receiver.received[0])
    world.time.advanceTo(await nextWake(world, 'the deliverer waiting for attempt 2'))
    const retry = await until('the retry', () => receiver.received[1])
    for (const [label, got] of [['attempt 1', first], ['attempt 2', retry]] as const) {
      const headers = standardHeaders(got.headers)
      const id = headers['webhook-id'] ?? ''
      t.equal(headers['webhook-id'], got.headers['x-webhook-id'], `${label}: webhook-id is the delivery id`)
      const sentAt = (JSON.parse(got.body) as { timestamp: number }).timestamp
      t.equal(headers['webhook-timestamp'], String(Math.floor(sentAt / 1000)), `${label}: webhook-timestamp is the dispatch time in whole seconds`)
      t.equal(headers['webhook-signature'], referenceSignature(key, id, headers['webhook-timestamp'] ?? '', got.body), `${label}: the signature is the spec's HMAC`)
      t.same(library().verify(got.body, headers), JSON.parse(got.body), `${label}: the library verifies it`)
      t.throws(() => library().verify(`${got.body} `, headers), WebhookVerificationError, `${label}: a changed body does not verify`)
      t.throws(() => library().verify(got.body, { ...headers, 'webhook-id': `${id}x` }), WebhookVerificationError, `${label}: another id does not verify`)
    }
    t.equal(retry.headers['webhook-id'], first.headers['webhook-id'], 'a retry keeps its webhook-id, so receivers de-duplicate on it')
  })
}
