import { createHmac, timingSafeEqual } from 'node:crypto'
import t from 'tap'
import { ServiceMetrics } from '../../api/metrics/service-metrics.js'
import { nextWake, startReceiver, startWorld, until } from './world.js'

const SECRET = 'whsec_test-secret-ünïcode'

/** An HMAC check written from the spec, not from the product's webhook-request.ts. */
function independentlyVerified(rawBody: string, secret: string, header: string | string[] | undefined): boolean {
  if (typeof header !== 'string' || !/^[0-9a-f]{64}$/.test(header)) return false
  const expected = createHmac('sha256', Buffer.from(secret, 'utf8')).update(Buffer.from(rawBody, 'utf8')).digest()
  return timingSafeEqual(expected, Buffer.from(header, 'hex'))
}

t.test('a completed command is POSTed, signed, with data equal to the GET poll response', async (t) => {
  const world = await startWorld(t)
  const receiver = await startReceiver(t)
  const { api_key } = await world.api.createAccount('free')
  await world.putWebhook(api_key, { url: `${receiver.url}/hooks/ffkube`, secret: SECRET })
  await world.deliverer()
  for (const status of ['SUCCESS', 'FAILED'] as const) {
    const before = receiver.received.length
    const commandId = await world.submit(api_key)
    await world.complete(commandId, status)
    const got = await until('the webhook', () => receiver.received[before])
    t.equal(got.path, '/hooks/ffkube')
    t.equal(got.headers['content-type'], 'application/json')
    t.equal(got.headers['user-agent'], 'ffkube-Webhook/1.0')
    t.ok(independentlyVerified(got.body, SECRET, got.headers['x-webhook-signature']), `${status}: signature verifies`)
    t.notOk(independentlyVerified(got.body + ' ', SECRET, got.headers['x-webhook-signature']), 'a changed body does not verify')
    const body = JSON.parse(got.body) as { data: unknown; timestamp: number }
    t.same(Object.keys(body), ['data', 'timestamp'])
    t.equal(body.timestamp, world.time.now, 'timestamp is the dispatch time in ms')
    t.equal(got.headers['x-webhook-timestamp'], String(world.time.now))
    t.equal(got.headers['x-webhook-id'], `whd_${commandId}`)
    t.equal(got.headers['x-webhook-attempt'], '1')
    const pollText = await world.poll(api_key, commandId)
    t.same(body.data, JSON.parse(pollText), `${status}: data deep-equals GET`)
    t.equal(got.body, `{"data":${pollText},"timestamp":${body.timestamp}}`, `${status}: data is GET's text byte for byte`)
    t.equal((body.data as { status: string }).status, status)
  }
  await world.drained()
  t.equal(receiver.received.length, 2, 'one POST per completion')
})

t.test('without a secret no signature header of either scheme is sent', async (t) => {
  const world = await startWorld(t)
  const receiver = await startReceiver(t)
  const { api_key } = await world.api.createAccount('free')
  await world.putWebhook(api_key, { url: receiver.url })
  await world.deliverer()
  const commandId = await world.submit(api_key)
  await world.complete(commandId)
  const got = await until('the webhook', () => receiver.received[0])
  t.equal(got.headers['x-webhook-signature'], undefined)
  // Standard Webhooks (standard-webhooks.test.ts): its id and timestamp still, its signature not.
  t.equal(got.headers['webhook-id'], `whd_${commandId}`)
  t.equal(got.headers['webhook-timestamp'], String(Math.floor(world.time.now / 1000)))
  t.equal(got.headers['webhook-signature'], undefined)
})

t.test('a command webhook_url overrides the account URL and never touches its failure counter', async (t) => {
  const world = await startWorld(t)
  const account = await startReceiver(t)
  const own = await startReceiver(t)
  own.behave((_req, res) => res.writeHead(500).end())
  const { api_key } = await world.api.createAccount('business')
  await world.putWebhook(api_key, { url: account.url, secret: SECRET })
  await world.deliverer()
  const commandId = await world.submit(api_key, { webhook_url: `${own.url}/mine` })
  await world.complete(commandId)
  const got = await until('the per-command webhook', () => own.received[0])
  t.equal(got.path, '/mine')
  t.ok(independentlyVerified(got.body, SECRET, got.headers['x-webhook-signature']), 'signed with the account secret')
  // Walk its whole schedule: eight failures at the per-command URL.
  for (let attempt = 2; attempt <= 8; attempt++) {
    const deadline = await nextWake(world, `the deliverer waiting for attempt ${attempt}`)
    world.time.advanceTo(deadline)
    await until(`attempt ${attempt}`, () => own.received.length === attempt)
  }
  await world.drained('the delivery exhausted')
  t.equal(own.received.length, 8, 'eight attempts, then it stops')
  t.equal(account.received.length, 0, 'the account URL got nothing')
  const config = await world.api.app.inject({ method: 'GET', url: '/api/v1/webhook-config', headers: { 'x-api-key': api_key } })
  t.match(config.json(), { is_active: true, consecutive_failures: 0 }, 'account webhook untouched')
})

t.test('an inactive account webhook gets no delivery', async (t) => {
  const world = await startWorld(t)
  const receiver = await startReceiver(t)
  const { api_key } = await world.api.createAccount('free')
  await world.putWebhook(api_key, { url: receiver.url })
  await world.api.app.inject({ method: 'DELETE', url: '/api/v1/webhook-config', headers: { 'x-api-key': api_key } })
  await world.deliverer()
  const commandId = await world.submit(api_key)
  await world.complete(commandId)
  await world.drained('the completion handled')
  t.equal(receiver.received.length, 0)
  const log = await world.api.app.inject({ method: 'GET', url: '/api/v1/webhook-deliveries', headers: { 'x-api-key': api_key } })
  t.same(log.json().deliveries, [], 'and nothing is logged')
})

t.test('failures: 3xx is not followed, 4xx, 5xx, a hanging receiver and a closed connection all fail', async (t) => {
  const world = await startWorld(t)
  const receiver = await startReceiver(t)
  const target = await startReceiver(t)
  const { api_key } = await world.api.createAccount('free')
  await world.putWebhook(api_key, { url: receiver.url })
  await world.deliverer({ timeoutMs: 300 })
  const cases: { name: string; behave: Parameters<typeof receiver.behave>[0]; status: number | null; error: RegExp }[] = [
    { name: '302', behave: (_q, r) => r.writeHead(302, { location: `${target.url}/elsewhere` }).end(), status: 302, error: /^HTTP 302: redirects are not followed$/ },
    { name: '404', behave: (_q, r) => r.writeHead(404).end(), status: 404, error: /^HTTP 404$/ },
    { name: '503', behave: (_q, r) => r.writeHead(503).end(), status: 503, error: /^HTTP 503$/ },
    { name: 'hang', behave: () => undefined, status: null, error: /^timeout: no answer within 300 ms$/ },
    { name: 'close', behave: (q) => q.socket.destroy(), status: null, error: /^connection failed: / },
  ]
  for (const c of cases) {
    receiver.behave(c.behave)
    const before = receiver.received.length
    const commandId = await world.submit(api_key)
    await world.complete(commandId)
    await until(`${c.name}: the attempt`, () => receiver.received.length > before)
    const entry = await until(`${c.name}: its log entry`, async () => {
      const res = await world.api.app.inject({ method: 'GET', url: `/api/v1/webhook-deliveries?command_id=${commandId}`, headers: { 'x-api-key': api_key } })
      return res.json<{ deliveries: Record<string, unknown>[] }>().deliveries[0]
    })
    t.match(entry, { command_id: commandId, attempt: 1, outcome: 'failure', status_code: c.status, error: c.error, url: `${receiver.url}/` }, c.name)
    t.ok(typeof entry.duration_ms === 'number', `${c.name}: duration recorded`)
  }
  t.equal(target.received.length, 0, 'the redirect target was never contacted')
  const config = await world.api.app.inject({ method: 'GET', url: '/api/v1/webhook-config', headers: { 'x-api-key': api_key } })
  t.match(config.json(), { is_active: true, consecutive_failures: 5 }, 'five failures in a row, still active')
})

t.test('a private-address webhook is refused when ALLOW_PRIVATE_NETWORKS is off', async (t) => {
  const world = await startWorld(t)
  const receiver = await startReceiver(t)
  const { api_key } = await world.api.createAccount('free')
  // The API allows it (tests run with ALLOW_PRIVATE_NETWORKS); the deliverer below does not.
  await world.putWebhook(api_key, { url: `http://localhost:${new URL(receiver.url).port}/hook` })
  await world.deliverer({ allowPrivateNetworks: false })
  const commandId = await world.submit(api_key)
  await world.complete(commandId)
  const entry = await until('the refused attempt in the log', async () => {
    const res = await world.api.app.inject({ method: 'GET', url: '/api/v1/webhook-deliveries', headers: { 'x-api-key': api_key } })
    return res.json<{ deliveries: Record<string, unknown>[] }>().deliveries[0]
  })
  t.match(entry, { command_id: commandId, outcome: 'failure', status_code: null, error: /^refused: localhost resolves to .*loopback/ })
  // The entry is written once the refused attempt has ended.
  t.equal(receiver.received.length, 0, 'nothing was sent')
})

t.test('the first attempt sends the completion event\'s snapshot; a retry sends the command as it is then', async (t) => {
  const world = await startWorld(t)
  const receiver = await startReceiver(t)
  receiver.behave((_q, r, n) => r.writeHead(n === 1 ? 503 : 200).end())
  const { api_key } = await world.api.createAccount('free')
  await world.putWebhook(api_key, { url: receiver.url })
  await world.deliverer()
  const commandId = await world.submit(api_key)
  await world.complete(commandId)
  // Changed after completion, the way DELETE /commands/:id/files changes a record.
  await world.api.db.collection('commands').updateOne({ _id: commandId as never }, { $set: { 'output_results.out_small.is_deleted': true } })
  const first = await until('attempt 1', () => receiver.received[0])
  const sent = (r: { body: string }) => (JSON.parse(r.body) as { data: { output_files: { out_small: { is_deleted: boolean } } } }).data.output_files.out_small
  t.equal(sent(first).is_deleted, false, 'attempt 1: the command as it was at completion, from the event, not re-read')
  world.time.advanceTo((await nextWake(world, 'the retry')) + 1)
  const second = await until('attempt 2', () => receiver.received[1])
  t.equal(second.headers['x-webhook-attempt'], '2')
  t.equal(sent(second).is_deleted, true, 'attempt 2: read from MongoDB when it is sent')
  t.equal(second.body.replace(/"timestamp":\d+\}$/, ''), `{"data":${await world.poll(api_key, commandId)},`, 'and equal to GET at that time')
})

t.test('a completion event without a snapshot is delivered from the stored command', async (t) => {
  const world = await startWorld(t)
  const receiver = await startReceiver(t)
  const { api_key } = await world.api.createAccount('free')
  await world.putWebhook(api_key, { url: receiver.url })
  await world.deliverer()
  const commandId = await world.submit(api_key)
  await world.complete(commandId, 'SUCCESS', { snapshot: false })
  const got = await until('the webhook', () => receiver.received[0])
  t.equal(got.body.replace(/,"timestamp":\d+\}$/, '}'), `{"data":${await world.poll(api_key, commandId)}}`)
})

t.test('each attempt is counted in ffkube_webhook_attempts_total by outcome', async (t) => {
  const world = await startWorld(t)
  const receiver = await startReceiver(t)
  receiver.behave((_q, r, n) => r.writeHead(n === 1 ? 500 : 204).end())
  const { api_key } = await world.api.createAccount('free')
  await world.putWebhook(api_key, { url: receiver.url })
  const metrics = new ServiceMetrics()
  await world.deliverer({ metrics })
  await world.complete(await world.submit(api_key))
  await until('attempt 1', () => receiver.received[0])
  world.time.advanceTo((await nextWake(world, 'the retry')) + 1)
  await until('attempt 2', () => receiver.received[1])
  await world.drained('the delivery over')
  const text = await metrics.registry.metrics()
  t.match(text, /^ffkube_webhook_attempts_total\{outcome="failure"\} 1$/m)
  t.match(text, /^ffkube_webhook_attempts_total\{outcome="success"\} 1$/m)
})
