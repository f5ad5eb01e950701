import t from 'tap'
import { startApi } from '../harness/api.js'

t.test('API key authentication', async (t) => {
  const api = await startApi(t)
  const { api_key, key_id } = await api.createAccount('free')
  const get = (headers: Record<string, string>) => api.app.inject({ method: 'GET', url: '/api/v1/commands', headers })

  t.test('rejects a request without X-API-KEY with 401 UNAUTHORIZED and detail', async (t) => {
    const res = await get({})
    t.equal(res.statusCode, 401)
    t.same(res.json(), { error: 'UNAUTHORIZED', message: 'missing X-API-KEY header', detail: 'missing X-API-KEY header' })
  })

  t.test('rejects a key of the wrong format', async (t) => {
    const res = await get({ 'x-api-key': 'ffsk_NOTHEX' })
    t.equal(res.statusCode, 401)
    t.match(res.json().message, /ffsk_ followed by 64 lowercase hex/)
  })

  t.test('rejects a well-formed key that was never issued', async (t) => {
    const res = await get({ 'x-api-key': `ffsk_${'0'.repeat(64)}` })
    t.equal(res.statusCode, 401)
    t.equal(res.json().error, 'UNAUTHORIZED')
  })

  t.test('accepts a valid key (the route itself may not exist yet, but auth passes)', async (t) => {
    const res = await get({ 'x-api-key': api_key })
    t.not(res.statusCode, 401)
  })

  t.test('stores the key sealed and only its hash in clear', async (t) => {
    const stored = await api.db.collection('api_keys').findOne({ _id: key_id as never })
    t.ok(stored)
    t.notOk(JSON.stringify(stored).includes(api_key), 'the key never appears in clear')
    t.equal(await api.app.accounts.revealKey(key_id), api_key, 'an administrator can reveal it again')
  })

  t.test('a revoked key is refused on the very next request', async (t) => {
    t.ok(await api.app.accounts.revokeKey(key_id))
    const res = await get({ 'x-api-key': api_key })
    t.equal(res.statusCode, 401)
    t.equal(res.json().message, 'invalid or revoked API key')
  })

  t.test('health endpoints need no key', async (t) => {
    const res = await api.app.inject({ method: 'GET', url: '/healthz' })
    t.equal(res.statusCode, 200)
  })
})
