import { randomInt } from 'node:crypto'
import t from 'tap'
import { connect } from 'nats'
import type { FastifyInstance } from 'fastify'
import { createLogger } from '../../api/logger.js'
import { buildServer } from '../../api/server.js'
import { SignInLinkRepository } from '../../api/console/sign-in-link-repository.js'
import { startApi } from '../harness/api.js'
import { startNats } from '../harness/nats.js'

const MINUTE = 60_000
const LIMIT = 3
const WRONG_KEY = `ffsk_${'0'.repeat(64)}`

t.test('failed console sign-ins per client address', async (t) => {
  // A whole minute picked per run: a NATS server shared between runs (NATS_URL) keeps a window's counts for two minutes.
  let now = new Date(randomInt(28_000_000, 29_000_000) * MINUTE)
  const clock = () => now
  /** Moves the clock to `seconds` into a minute no earlier subtest used. */
  const freshMinute = (seconds = 0) => {
    now = new Date((Math.floor(now.getTime() / MINUTE) + 2) * MINUTE + seconds * 1000)
  }
  const nats = await connect({ servers: (await startNats(t)).url })
  t.teardown(() => nats.close())
  const api = await startApi(t, { clock, nats, signInFailuresPerMinute: LIMIT })
  const account = await api.createAccount('growth')
  const links = new SignInLinkRepository(api.db)

  /** A second replica on the same database and NATS, behind a proxy at 127.0.0.1 that it trusts. */
  const behindProxy: FastifyInstance = await buildServer({
    logger: createLogger('test', 'silent'),
    trustProxy: ['127.0.0.1'],
    app: { db: api.db, secretBox: api.secretBox, s3: api.s3, s3Bucket: api.s3Bucket, clock, nats, signInFailuresPerMinute: LIMIT, rateLimits: { free: 0, trial: 0, growth: 0, business: 0 } },
  })
  t.teardown(() => behindProxy.close())

  const signIn = (apiKey: string, from: { remoteAddress?: string; headers?: Record<string, string>; app?: FastifyInstance } = {}) =>
    (from.app ?? api.app).inject({ method: 'POST', url: '/console/api/session', remoteAddress: from.remoteAddress ?? '192.0.2.1', headers: from.headers ?? {}, payload: { api_key: apiKey } })

  t.test('the attempt after the limit gets 429 RATE_LIMITED with Retry-After, a right key included, until the minute ends', async (t) => {
    freshMinute(15)
    const from = { remoteAddress: '192.0.2.10' }
    for (let i = 1; i <= LIMIT; i++) t.equal((await signIn(WRONG_KEY, from)).statusCode, 401, `failure ${i} is answered 401`)
    const limited = await signIn(WRONG_KEY, from)
    t.equal(limited.statusCode, 429)
    t.equal(limited.json().error, 'RATE_LIMITED')
    t.match(limited.json().message, /too many failed sign-in attempts from this address.*retry in 45 s/)
    t.equal(limited.headers['retry-after'], '45', 'seconds until the minute ends')
    const right = await signIn(account.api_key, from)
    t.equal(right.statusCode, 429, 'a right key is not even checked: the answer tells nothing about it')
    t.same(right.json(), limited.json(), 'the same answer as for a wrong key')
    t.notOk(right.headers['set-cookie'])
    const { token } = await links.issue(account.account_id, now)
    const link = await api.app.inject({ method: 'POST', url: '/console/api/session/link', remoteAddress: from.remoteAddress, payload: { token } })
    t.equal(link.statusCode, 429, 'sign-in links count against the same address')

    freshMinute(0)
    const after = await signIn(account.api_key, from)
    t.equal(after.statusCode, 200, 'the next minute the right key signs in at once')
    const linkAfter = await api.app.inject({ method: 'POST', url: '/console/api/session/link', remoteAddress: from.remoteAddress, payload: { token } })
    t.equal(linkAfter.statusCode, 200, 'and the link refused with 429 was not used up')
  })

  t.test('successful sign-ins do not count against the address', async (t) => {
    freshMinute()
    const from = { remoteAddress: '192.0.2.20' }
    for (let i = 0; i < LIMIT + 2; i++) t.equal((await signIn(account.api_key, from)).statusCode, 200)
    for (let i = 0; i < LIMIT; i++) t.equal((await signIn(WRONG_KEY, from)).statusCode, 401)
    t.equal((await signIn(WRONG_KEY, from)).statusCode, 429)
  })

  t.test('concurrent failed attempts from one address get at most the limit checked', async (t) => {
    freshMinute()
    const answers = await Promise.all(Array.from({ length: 12 }, () => signIn(WRONG_KEY, { remoteAddress: '192.0.2.30' })))
    const statuses = answers.map((answer) => answer.statusCode)
    t.equal(statuses.filter((status) => status === 401).length, LIMIT, statuses.join(' '))
    t.equal(statuses.filter((status) => status === 429).length, 12 - LIMIT)
  })

  t.test('another address is not affected', async (t) => {
    freshMinute()
    for (let i = 0; i <= LIMIT; i++) await signIn(WRONG_KEY, { remoteAddress: '192.0.2.40' })
    t.equal((await signIn(WRONG_KEY, { remoteAddress: '192.0.2.40' })).statusCode, 429)
    t.equal((await signIn(WRONG_KEY, { remoteAddress: '192.0.2.41' })).statusCode, 401)
    t.equal((await signIn(account.api_key, { remoteAddress: '192.0.2.41' })).statusCode, 200)
  })

  t.test('with TRUST_PROXY off, a spoofed X-Forwarded-For does not escape the limit', async (t) => {
    freshMinute()
    const spoofed = (i: number) => ({ remoteAddress: '192.0.2.50', headers: { 'x-forwarded-for': `198.51.100.${i}` } })
    for (let i = 1; i <= LIMIT; i++) t.equal((await signIn(WRONG_KEY, spoofed(i))).statusCode, 401)
    t.equal((await signIn(WRONG_KEY, spoofed(99))).statusCode, 429, 'counted by the socket\'s address, whatever the header says')
  })

  t.test('with TRUST_PROXY naming the proxy, clients behind it are counted by X-Forwarded-For', async (t) => {
    freshMinute()
    const client = (address: string) => ({ app: behindProxy, remoteAddress: '127.0.0.1', headers: { 'x-forwarded-for': `10.9.9.9, ${address}` } })
    for (let i = 0; i < LIMIT; i++) t.equal((await signIn(WRONG_KEY, client('203.0.113.5'))).statusCode, 401)
    t.equal((await signIn(WRONG_KEY, client('203.0.113.5'))).statusCode, 429)
    t.equal((await signIn(WRONG_KEY, client('203.0.113.6'))).statusCode, 401, 'another client behind the same proxy is not affected')
    t.equal((await signIn(account.api_key, client('203.0.113.6'))).statusCode, 200)

    const direct = (i: number) => ({ app: behindProxy, remoteAddress: '198.51.100.77', headers: { 'x-forwarded-for': `203.0.113.${100 + i}` } })
    for (let i = 0; i < LIMIT; i++) t.equal((await signIn(WRONG_KEY, direct(i))).statusCode, 401)
    t.equal((await signIn(WRONG_KEY, direct(LIMIT))).statusCode, 429, 'a peer that is not the trusted proxy cannot pick its address either')
  })

  t.test('IPv6 clients are counted by their /64', async (t) => {
    freshMinute()
    const client = (address: string) => ({ app: behindProxy, remoteAddress: '127.0.0.1', headers: { 'x-forwarded-for': address } })
    for (let i = 1; i <= LIMIT; i++) t.equal((await signIn(WRONG_KEY, client(`2001:db8:1:2::${i}`))).statusCode, 401)
    t.equal((await signIn(WRONG_KEY, client('2001:db8:1:2:ffff:ffff:ffff:ffff'))).statusCode, 429, 'another address of the same /64')
    t.equal((await signIn(WRONG_KEY, client('2001:db8:1:3::1'))).statusCode, 401, 'the next /64 is another client')
  })

  t.test('the host and scheme come from X-Forwarded-Host and -Proto only when the proxy is trusted', async (t) => {
    freshMinute()
    const forwarded = { origin: 'https://media.example.com', 'x-forwarded-host': 'media.example.com', 'x-forwarded-proto': 'https', host: 'ffkube-api.ffkube.svc' }
    const trusted = await signIn(account.api_key, { app: behindProxy, remoteAddress: '127.0.0.1', headers: forwarded })
    t.equal(trusted.statusCode, 200, trusted.body)
    t.match(String(trusted.headers['set-cookie']), /; Secure/, 'https as the trusted proxy says: the cookie is Secure')
    const untrusted = await signIn(account.api_key, { remoteAddress: '127.0.0.1', headers: forwarded })
    t.equal(untrusted.statusCode, 403, 'without TRUST_PROXY the Origin must match the Host header itself')
    const spoofing = await signIn(account.api_key, { app: behindProxy, remoteAddress: '198.51.100.78', headers: forwarded })
    t.equal(spoofing.statusCode, 403, 'nor is an untrusted peer\'s X-Forwarded-Host believed')
  })
})
