import t from 'tap'
import { buildApp } from '../../api/app.js'
import { createLogger } from '../../api/logger.js'
import { startApi } from '../harness/api.js'

t.test('rate limits per API key', async (t) => {
  let now = new Date('2026-03-01T12:00:15Z')
  const clock = () => now
  const rateLimits = { free: 3, trial: 3, growth: 3, business: 5 }
  const api = await startApi(t, { clock, rateLimits })
  const get = (key: string, app = api.app) => app.inject({ method: 'GET', url: '/api/v1/webhook-config', headers: { 'x-api-key': key } })

  t.test('answers 429 RATE_LIMITED with Retry-After once a key has spent its minute', async (t) => {
    now = new Date('2026-03-01T12:00:15Z')
    const { api_key } = await api.createAccount('free')
    for (let i = 0; i < 3; i++) {
      const res = await get(api_key)
      t.not(res.statusCode, 429, `request ${i + 1} is within the limit`)
      t.equal(res.headers['x-ratelimit-remaining'], String(2 - i))
    }
    const limited = await get(api_key)
    t.equal(limited.statusCode, 429)
    t.equal(limited.json().error, 'RATE_LIMITED')
    t.match(limited.json().message, /3 requests per minute/)
    t.equal(limited.headers['retry-after'], '45', 'seconds until the window ends')
    t.equal(limited.headers['x-ratelimit-remaining'], '0')
    t.equal(limited.headers['x-ratelimit-limit'], '3')
  })

  t.test('other keys, of the same or another account, are unaffected', async (t) => {
    now = new Date('2026-03-01T12:01:30Z')
    const first = await api.createAccount('free')
    const second = await api.app.accounts.createKey(first.account_id)
    const stranger = await api.createAccount('free')
    for (let i = 0; i < 4; i++) await get(first.api_key)
    t.equal((await get(first.api_key)).statusCode, 429)
    t.not((await get(second.api_key)).statusCode, 429, 'another key of the same account')
    t.not((await get(stranger.api_key)).statusCode, 429, 'a key of another account')
  })

  t.test('the next window lets the key in again and old windows are cleaned up', async (t) => {
    now = new Date('2026-03-01T12:02:59Z')
    const { api_key, key_id } = await api.createAccount('free')
    for (let i = 0; i < 3; i++) await get(api_key)
    const limited = await get(api_key)
    t.equal(limited.statusCode, 429)
    t.equal(limited.headers['retry-after'], '1')
    now = new Date('2026-03-01T12:03:00Z')
    t.not((await get(api_key)).statusCode, 429)
    const windows = await api.db.collection('rate_limit_windows').find({ key_id }).toArray()
    t.equal(windows.length, 1, 'only the current window is kept')
  })

  t.test('limits follow the plan', async (t) => {
    now = new Date('2026-03-01T12:04:00Z')
    const { api_key } = await api.createAccount('business')
    for (let i = 0; i < 5; i++) t.not((await get(api_key)).statusCode, 429)
    t.equal((await get(api_key)).statusCode, 429, 'the sixth request is over the Business limit of 5')
  })

  t.test('every API replica counts against the same limit', async (t) => {
    now = new Date('2026-03-01T12:05:00Z')
    const replica = await buildApp({ logger: createLogger('test', 'silent'), probes: [], db: api.db, secretBox: api.secretBox, s3: api.s3, s3Bucket: api.s3Bucket, clock, rateLimits })
    t.teardown(() => replica.close())
    const { api_key } = await api.createAccount('free')
    t.not((await get(api_key)).statusCode, 429)
    t.not((await get(api_key, replica)).statusCode, 429)
    t.not((await get(api_key)).statusCode, 429)
    t.equal((await get(api_key, replica)).statusCode, 429, 'the fourth request, on the other replica, is refused')
  })

  t.test('a limit of 0 means unlimited', async (t) => {
    const unlimited = await startApi(t, { clock, rateLimits: { ...rateLimits, free: 0 } })
    const { api_key } = await unlimited.createAccount('free')
    for (let i = 0; i < 6; i++) t.not((await get(api_key, unlimited.app)).statusCode, 429)
  })

  t.test('requests without a valid key are refused before they are counted', async (t) => {
    const res = await api.app.inject({ method: 'GET', url: '/api/v1/webhook-config' })
    t.equal(res.statusCode, 401)
  })
})
