import t from 'tap'
import { startApi } from '../harness/api.js'

const SECRET = 'whsec-this-must-never-come-back'

t.test('webhook configuration', async (t) => {
  let now = new Date('2026-01-01T00:00:00Z')
  const api = await startApi(t, { clock: () => now })
  const call = (key: string, method: 'GET' | 'PUT' | 'DELETE', payload?: object) =>
    api.app.inject({ method, url: '/api/v1/webhook-config', headers: { 'x-api-key': key }, ...(payload ? { payload } : {}) })
  const bodies: string[] = []
  const record = <T extends { body: string }>(res: T): T => {
    bodies.push(res.body)
    return res
  }

  t.test('GET and DELETE answer 404 NOT_FOUND before anything is configured', async (t) => {
    const { api_key } = await api.createAccount('free')
    for (const method of ['GET', 'DELETE'] as const) {
      const res = await call(api_key, method)
      t.equal(res.statusCode, 404, method)
      t.equal(res.json().error, 'NOT_FOUND')
    }
  })

  t.test('PUT configures a webhook on any plan and GET shows it without the secret', async (t) => {
    const { api_key } = await api.createAccount('free')
    const put = record(await call(api_key, 'PUT', { url: 'https://hooks.example.com/ffkube', secret: SECRET }))
    t.equal(put.statusCode, 200)
    t.same(put.json(), { success: true, url: 'https://hooks.example.com/ffkube' })
    const got = record(await call(api_key, 'GET'))
    t.equal(got.statusCode, 200)
    t.same(got.json(), {
      url: 'https://hooks.example.com/ffkube',
      is_active: true,
      disabled_at: null,
      consecutive_failures: 0,
      has_secret: true,
      created_at: now.toISOString(),
      updated_at: now.toISOString(),
    })
  })

  t.test('stores the secret sealed and the deliverer can open it', async (t) => {
    const { api_key, account_id } = await api.createAccount('growth')
    await call(api_key, 'PUT', { url: 'https://hooks.example.com/a', secret: SECRET })
    const stored = await api.db.collection('webhook_configs').findOne({ _id: account_id as never })
    t.notOk(JSON.stringify(stored).includes(SECRET))
    t.match(await api.app.webhookConfigs.findDeliveryTarget(account_id), { url: 'https://hooks.example.com/a', secret: SECRET, is_active: true })
  })

  for (const [what, payload, message] of [
    ['a missing url', {}, /body\.url is required/],
    ['a url that is not a URL', { url: 'not a url' }, /^body\.url: must be an absolute http\(s\) URL/],
    ['a non-http url', { url: 'ftp://hooks.example.com' }, /^body\.url: must use http or https, not ftp/],
    ['a url with credentials', { url: 'https://u:p@hooks.example.com' }, /^body\.url: must not carry credentials/],
    ['a loopback address', { url: 'http://127.0.0.1:8080/hook' }, /^url: 127\.0\.0\.1 is a loopback address/],
    ['a metadata address', { url: 'http://169.254.169.254/latest' }, /^url: 169\.254\.169\.254 is a linkLocal address/],
    ['a url of the wrong type', { url: { href: 'https://x.example' } }, /body\.url/],
  ] as const) {
    t.test(`PUT rejects ${what} with 422 VALIDATION_ERROR`, async (t) => {
      const { api_key } = await api.createAccount('free')
      const res = await call(api_key, 'PUT', payload)
      t.equal(res.statusCode, 422)
      t.equal(res.json().error, 'VALIDATION_ERROR')
      t.match(res.json().message, message)
    })
  }

  t.test('DELETE deactivates but keeps the configuration; PUT re-enables and resets the counter', async (t) => {
    const { api_key, account_id } = await api.createAccount('business')
    await call(api_key, 'PUT', { url: 'https://hooks.example.com/b', secret: SECRET })
    for (let i = 0; i < 3; i++) await api.app.webhookConfigs.recordFailure(account_id)
    t.equal((await call(api_key, 'GET')).json().consecutive_failures, 3)

    now = new Date('2026-01-01T01:00:00Z')
    const del = record(await call(api_key, 'DELETE'))
    t.equal(del.statusCode, 200)
    t.same(del.json(), { success: true })
    const off = (await call(api_key, 'GET')).json()
    t.equal(off.is_active, false)
    t.equal(off.disabled_at, now.toISOString())
    t.equal(off.url, 'https://hooks.example.com/b', 'configuration retained')
    t.match(await api.app.webhookConfigs.findDeliveryTarget(account_id), { is_active: false }, 'no account-level deliveries while inactive')
    t.equal((await call(api_key, 'DELETE')).statusCode, 200, 'DELETE twice is fine')

    const put = await call(api_key, 'PUT', { url: 'https://hooks.example.com/c' })
    t.equal(put.statusCode, 200)
    const on = (await call(api_key, 'GET')).json()
    t.equal(on.is_active, true)
    t.equal(on.disabled_at, null)
    t.equal(on.consecutive_failures, 0)
    t.equal(on.has_secret, false, 'a PUT without a secret stops signing')
    t.equal(on.url, 'https://hooks.example.com/c')
  })

  t.test('eight consecutive failures disable the webhook and record disabled_at', async (t) => {
    const { api_key, account_id } = await api.createAccount('business')
    await call(api_key, 'PUT', { url: 'https://hooks.example.com/d' })
    for (let i = 0; i < 7; i++) await api.app.webhookConfigs.recordFailure(account_id)
    t.equal((await call(api_key, 'GET')).json().is_active, true, 'seven failures leave it on')
    await api.app.webhookConfigs.recordSuccess(account_id)
    t.equal((await call(api_key, 'GET')).json().consecutive_failures, 0, 'a success ends the run')
    for (let i = 0; i < 8; i++) await api.app.webhookConfigs.recordFailure(account_id)
    const off = (await call(api_key, 'GET')).json()
    t.equal(off.is_active, false)
    t.equal(off.consecutive_failures, 8)
    t.equal(off.disabled_at, now.toISOString())
  })

  t.test('each account sees only its own configuration', async (t) => {
    const a = await api.createAccount('free')
    const b = await api.createAccount('free')
    await call(a.api_key, 'PUT', { url: 'https://hooks.example.com/a-only' })
    t.equal((await call(b.api_key, 'GET')).statusCode, 404)
    t.equal((await call(b.api_key, 'DELETE')).statusCode, 404)
    t.equal((await call(a.api_key, 'GET')).json().is_active, true, 'B’s DELETE did not touch A’s webhook')
  })

  t.test('needs an API key', async (t) => {
    const res = await api.app.inject({ method: 'GET', url: '/api/v1/webhook-config' })
    t.equal(res.statusCode, 401)
    t.same(res.json(), { error: 'UNAUTHORIZED', message: 'missing X-API-KEY header', detail: 'missing X-API-KEY header' })
  })

  t.test('no response carried the secret', async (t) => {
    t.ok(bodies.length >= 3)
    for (const body of bodies) t.notOk(body.includes(SECRET))
  })
})
