import t from 'tap'
import { startApi } from '../harness/api.js'
import { SESSION_ABSOLUTE_MS, SESSION_IDLE_MS, SIGN_IN_LINK_TTL_MS } from '../../api/console/session-lifetime.js'
import { SignInLinkRepository } from '../../api/console/sign-in-link-repository.js'
import { ConsoleSession, cookieFrom } from './console-client.js'

const MINUTE = 60_000

t.test('console sessions', async (t) => {
  let now = new Date('2026-11-20T10:00:00Z')
  const api = await startApi(t, { clock: () => now })
  const account = await api.createAccount('growth')

  t.test('signing in with an API key sets an HttpOnly, SameSite=Strict, short-lived session cookie and returns the CSRF token', async (t) => {
    const response = await api.app.inject({ method: 'POST', url: '/console/api/session', payload: { api_key: account.api_key } })
    t.equal(response.statusCode, 200, response.body)
    const cookie = String(response.headers['set-cookie'])
    t.match(cookie, /^ffkube_console=[A-Za-z0-9_-]{43}; /)
    t.match(cookie, /; HttpOnly/)
    t.match(cookie, /; SameSite=Strict/)
    t.match(cookie, /; Path=\//)
    t.match(cookie, new RegExp(`; Max-Age=${SESSION_IDLE_MS / 1000}(;|$)`), 'lives as long as the idle timeout')
    t.notMatch(cookie, /Secure/, 'not Secure over plain http')
    t.notMatch(cookie, /Expires=|Domain=/)
    t.equal(response.headers['cache-control'], 'no-store')
    const body = response.json()
    t.match(body, { account_id: account.account_id, plan: 'growth', signed_in_with: 'api_key', key_id: account.key_id, rate_limit_per_minute: 0, features: { video_downloads: true, business_features: false } })
    t.match(body.csrf_token, /^[A-Za-z0-9_-]{43}$/)
    t.notOk(response.body.includes(account.api_key), 'the key is not echoed')
  })

  t.test('the session is stored only as a hash of its id', async (t) => {
    const session = await ConsoleSession.signIn(api.app, account.api_key)
    const id = session.cookie.split('=')[1]!
    const stored = await api.db.collection('console_sessions').find({}).toArray()
    t.ok(stored.length > 0)
    t.notOk(JSON.stringify(stored).includes(id), 'the cookie value appears nowhere in the collection')
  })

  t.test('a wrong or revoked key does not sign in', async (t) => {
    const wrong = await api.app.inject({ method: 'POST', url: '/console/api/session', payload: { api_key: `ffsk_${'1'.repeat(64)}` } })
    t.equal(wrong.statusCode, 401)
    t.equal(wrong.json().error, 'UNAUTHORIZED')
    t.notOk(wrong.headers['set-cookie'])
    const malformed = await api.app.inject({ method: 'POST', url: '/console/api/session', payload: { api_key: 'nope' } })
    t.equal(malformed.statusCode, 400)
    t.match(malformed.json().message, /api_key/)
  })

  t.test('a sign-in posted from another site is refused', async (t) => {
    for (const headers of [{ origin: 'https://evil.example' }, { 'sec-fetch-site': 'cross-site' }, { origin: 'null' }]) {
      const response = await api.app.inject({ method: 'POST', url: '/console/api/session', headers, payload: { api_key: account.api_key } })
      t.equal(response.statusCode, 403, JSON.stringify(headers))
      t.notOk(response.headers['set-cookie'])
    }
  })

  t.test('the session endpoint needs the cookie: an X-API-KEY alone is not a console session', async (t) => {
    t.equal((await api.app.inject({ method: 'GET', url: '/console/api/session' })).statusCode, 401)
    const withKey = await api.app.inject({ method: 'GET', url: '/console/api/session', headers: { 'x-api-key': account.api_key } })
    t.equal(withKey.statusCode, 401)
    t.equal((await api.app.inject({ method: 'GET', url: '/console/api/keys', headers: { 'x-api-key': account.api_key } })).statusCode, 401)
  })

  t.test('a state-changing request with the cookie but without the CSRF token is refused, on the console and on /api/v1', async (t) => {
    const session = await ConsoleSession.signIn(api.app, account.api_key)
    const keys = await session.request('POST', '/console/api/keys', { csrf: false })
    t.equal(keys.statusCode, 403)
    t.match(keys.json(), { error: 'FORBIDDEN', message: /X-CSRF-Token/ })
    const wrong = await session.request('POST', '/console/api/keys', { headers: { 'x-csrf-token': 'x'.repeat(43) } })
    t.equal(wrong.statusCode, 403)
    const preset = { name: 'csrf', ffmpeg_command: 'ffmpeg -i {{in_v}} {{out_v}}', input_file_keys: ['in_v'], output_file_definitions: { out_v: 'o.mp4' } }
    const refused = await session.request('POST', '/api/v1/presets', { payload: preset, csrf: false })
    t.equal(refused.statusCode, 403)
    t.match(refused.json().message, /X-CSRF-Token/)
    const signOut = await session.request('DELETE', '/console/api/session', { csrf: false })
    t.equal(signOut.statusCode, 403, 'sign-out needs the token too')
    const accepted = await session.request('POST', '/api/v1/presets', { payload: preset })
    t.equal(accepted.statusCode, 201, accepted.body)
    const read = await session.request('GET', '/api/v1/presets')
    t.equal(read.statusCode, 200, 'a read needs no token')
  })

  t.test('a request with the cookie from another origin is refused even with the token, and no CORS header ever allows credentials', async (t) => {
    const session = await ConsoleSession.signIn(api.app, account.api_key)
    const hostile = { origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' }
    const read = await session.request('GET', '/api/v1/commands', { headers: hostile })
    t.equal(read.statusCode, 403)
    const change = await session.request('POST', '/console/api/keys', { headers: hostile })
    t.equal(change.statusCode, 403)
    const preflight = await api.app.inject({ method: 'OPTIONS', url: '/api/v1/commands', headers: { origin: 'https://evil.example', 'access-control-request-method': 'DELETE', 'access-control-request-headers': 'x-csrf-token' } })
    for (const response of [read, change, preflight]) {
      t.notOk(response.headers['access-control-allow-origin'], 'no Access-Control-Allow-Origin')
      t.notOk(response.headers['access-control-allow-credentials'], 'no Access-Control-Allow-Credentials')
    }
  })

  t.test('/api/v1 accepts the console session as it accepts an API key', async (t) => {
    const session = await ConsoleSession.signIn(api.app, account.api_key)
    const response = await session.request('GET', '/api/v1/commands')
    t.equal(response.statusCode, 200, response.body)
    t.match(String(response.headers['set-cookie']), /^ffkube_console=.*; Max-Age=\d+; HttpOnly; SameSite=Strict/, 'the cookie is renewed as the session slides')
    const stale = await api.app.inject({ method: 'GET', url: '/api/v1/commands', headers: { cookie: `ffkube_console=${'a'.repeat(43)}` } })
    t.equal(stale.statusCode, 401)
    t.match(stale.json().message, /sign in again/)
    const both = await api.app.inject({ method: 'GET', url: '/api/v1/commands', headers: { cookie: `ffkube_console=${'a'.repeat(43)}`, 'x-api-key': account.api_key } })
    t.equal(both.statusCode, 200, 'an X-API-KEY wins over a cookie')
  })

  t.test('a session ends after 30 idle minutes, slides with use, and ends 8 hours after sign-in at the latest', async (t) => {
    const start = now
    const session = await ConsoleSession.signIn(api.app, account.api_key)
    now = new Date(start.getTime() + 20 * MINUTE)
    t.equal((await session.request('GET', '/console/api/session')).statusCode, 200)
    now = new Date(start.getTime() + 45 * MINUTE)
    const slid = await session.request('GET', '/console/api/session')
    t.equal(slid.statusCode, 200, 'used 25 minutes ago: still alive')
    t.match(String(slid.headers['set-cookie']), new RegExp(`Max-Age=${SESSION_IDLE_MS / 1000};`), 'the cookie is renewed with it')
    now = new Date(start.getTime() + 45 * MINUTE + SESSION_IDLE_MS + MINUTE)
    const idle = await session.request('GET', '/console/api/session')
    t.equal(idle.statusCode, 401, 'idle for 31 minutes: ended')
    t.match(String(idle.headers['set-cookie']), /Max-Age=0/, 'and its cookie is cleared')

    now = new Date(start.getTime() + 24 * 60 * MINUTE)
    const long = await ConsoleSession.signIn(api.app, account.api_key)
    const signedInAt = now.getTime()
    for (let at = 20 * MINUTE; at < SESSION_ABSOLUTE_MS; at += 20 * MINUTE) {
      now = new Date(signedInAt + at)
      const alive = await long.request('GET', '/console/api/session')
      t.equal(alive.statusCode, 200, `alive at ${at / MINUTE} min`)
      t.ok(Date.parse(alive.json().expires_at) <= signedInAt + SESSION_ABSOLUTE_MS)
    }
    now = new Date(signedInAt + SESSION_ABSOLUTE_MS)
    t.equal((await long.request('GET', '/console/api/session')).statusCode, 401, 'ended at 8 hours though used every 20 minutes')
    now = new Date(signedInAt + SESSION_ABSOLUTE_MS + 60 * MINUTE)
  })

  t.test('signing out ends the session and clears the cookie', async (t) => {
    const session = await ConsoleSession.signIn(api.app, account.api_key)
    const out = await session.request('DELETE', '/console/api/session')
    t.equal(out.statusCode, 200)
    t.same(out.json(), { signed_out: true })
    const cleared = out.headers['set-cookie']
    t.equal(Array.isArray(cleared) ? cleared.length : 1, 1, 'one Set-Cookie')
    t.match(String(cleared), /^ffkube_console=; Path=\/; Max-Age=0; HttpOnly; SameSite=Strict/)
    t.equal((await session.request('GET', '/console/api/session')).statusCode, 401)
    t.equal((await session.request('GET', '/api/v1/commands')).statusCode, 401)
  })

  t.test('a sign-in link works once, by POST, within its lifetime', async (t) => {
    const links = new SignInLinkRepository(api.db)
    const { token } = await links.issue(account.account_id, now)
    t.notOk(JSON.stringify(await api.db.collection('console_sign_in_links').find({}).toArray()).includes(token), 'stored as a hash only')
    const get = await api.app.inject({ method: 'GET', url: `/console/api/session/link?token=${token}` })
    t.equal(get.statusCode, 405, 'a GET (a link prefetcher) is refused: a link is used by POST only')
    t.equal(get.headers.allow, 'POST')
    const page = await api.app.inject({ method: 'GET', url: `/console/?token=${token}` })
    t.notOk(page.headers['set-cookie'], 'nor does fetching the page')
    const first = await api.app.inject({ method: 'POST', url: '/console/api/session/link', payload: { token } })
    t.equal(first.statusCode, 200, first.body)
    t.match(first.json(), { account_id: account.account_id, signed_in_with: 'sign_in_link', key_id: null })
    const session = new ConsoleSession(api.app, cookieFrom(first), first.json().csrf_token)
    t.equal((await session.request('GET', '/console/api/keys')).statusCode, 200)
    const again = await api.app.inject({ method: 'POST', url: '/console/api/session/link', payload: { token } })
    t.equal(again.statusCode, 401, 'used once already')
    t.match(again.json().message, /used already or expired/)

    const late = await links.issue(account.account_id, now)
    now = new Date(now.getTime() + SIGN_IN_LINK_TTL_MS + 1000)
    const expired = await api.app.inject({ method: 'POST', url: '/console/api/session/link', payload: { token: late.token } })
    t.equal(expired.statusCode, 401, 'expired')
    const racing = await links.issue(account.account_id, now)
    const answers = await Promise.all([1, 2, 3].map(() => api.app.inject({ method: 'POST', url: '/console/api/session/link', payload: { token: racing.token } })))
    t.same(answers.map((answer) => answer.statusCode).sort(), [200, 401, 401], 'of three racing uses one wins')
  })
})
