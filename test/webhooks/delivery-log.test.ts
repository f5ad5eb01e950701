import t from 'tap'
import { startReceiver, startWorld, until } from './world.js'

t.test('the delivery log and redeliver endpoints', async (t) => {
  const world = await startWorld(t)
  const receiver = await startReceiver(t)
  const { api_key } = await world.api.createAccount('business')
  const other = await world.api.createAccount('business')
  await world.putWebhook(api_key, { url: `${receiver.url}/acct`, secret: 'k' })
  const deliverer = await world.deliverer()
  const get = (key: string, query = '') => world.api.app.inject({ method: 'GET', url: `/api/v1/webhook-deliveries${query}`, headers: { 'x-api-key': key } })
  const redeliver = (key: string, id: string) => world.api.app.inject({ method: 'POST', url: `/api/v1/commands/${id}/webhook/redeliver`, headers: { 'x-api-key': key } })

  const first = await world.submit(api_key)
  const second = await world.submit(api_key, { webhook_url: `${receiver.url}/own` })
  await world.complete(first)
  await until('first delivered', () => receiver.received.length === 1)
  await world.complete(second, 'FAILED')
  await until('second delivered', () => receiver.received.length === 2)

  t.test('lists the account\'s attempts newest first, with every field', async (t) => {
    const res = await until('both logged', async () => {
      const r = await get(api_key)
      return r.json().deliveries.length === 2 ? r : null
    })
    t.equal(res.statusCode, 200)
    const body = res.json()
    t.match(body, { limit: 50, offset: 0 })
    t.same(body.deliveries.map((d: { command_id: string }) => d.command_id), [second, first])
    t.match(body.deliveries[0], {
      delivery_id: `whd_${second}`,
      attempt: 1,
      target: 'command',
      url: `${receiver.url}/own`,
      outcome: 'success',
      status_code: 200,
      error: null,
      duration_ms: Number,
      started_at: String,
      finished_at: String,
    })
    t.match(body.deliveries[1], { target: 'account', url: `${receiver.url}/acct` })
    t.same((await get(api_key, `?command_id=${first}`)).json().deliveries.map((d: { command_id: string }) => d.command_id), [first])
    t.same((await get(api_key, '?limit=1&offset=1')).json().deliveries.map((d: { command_id: string }) => d.command_id), [first])
    t.equal((await get(api_key, '?limit=101')).statusCode, 400)
    t.same((await get(other.api_key)).json().deliveries, [], 'another account sees none of them')
  })

  t.test('redeliver sends the completion again with a new delivery id', async (t) => {
    const before = receiver.received.length
    const res = await redeliver(api_key, first)
    t.equal(res.statusCode, 202)
    const { delivery_id } = res.json<{ delivery_id: string; command_id: string }>()
    t.match(res.json(), { command_id: first, delivery_id: /^whd_[0-9a-f-]{36}$/ })
    t.not(delivery_id, `whd_${first}`)
    deliverer.nudge()
    const got = await until('the redelivery', () => receiver.received[before])
    t.equal(got.headers['x-webhook-id'], delivery_id)
    t.equal(got.headers['x-webhook-attempt'], '1')
    t.equal(got.path, '/acct')
    t.equal(JSON.stringify(JSON.parse(got.body).data), JSON.stringify(JSON.parse(receiver.received[0]!.body).data), 'the same data as the original')
    const logged = await until('logged', async () => (await get(api_key, `?command_id=${first}`)).json().deliveries.find((d: { delivery_id: string }) => d.delivery_id === delivery_id))
    t.match(logged, { outcome: 'success', attempt: 1 })
    await world.drained('the redelivery over')
    t.equal(receiver.received.length, before + 1, 'sent once')
  })

  t.test('redeliver refuses what it cannot send', async (t) => {
    const missing = await redeliver(api_key, '00000000-0000-4000-8000-000000000000')
    t.equal(missing.statusCode, 404)
    t.equal(missing.json().error, 'NOT_FOUND')
    const foreign = await redeliver(other.api_key, first)
    t.equal(foreign.statusCode, 404, 'another account\'s command is 404')
    const queued = await world.submit(api_key)
    const unfinished = await redeliver(api_key, queued)
    t.equal(unfinished.statusCode, 409)
    t.match(unfinished.json(), { error: 'CONFLICT', message: /QUEUED/ })
    await world.api.app.inject({ method: 'DELETE', url: '/api/v1/webhook-config', headers: { 'x-api-key': api_key } })
    const inactive = await redeliver(api_key, first)
    t.equal(inactive.statusCode, 409, 'no active target')
    t.equal((await redeliver(api_key, second)).statusCode, 202, 'a per-command URL needs no account webhook')
  })
})
