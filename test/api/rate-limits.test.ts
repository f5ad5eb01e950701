import t from 'tap'
import { connect, type NatsConnection } from 'nats'
import { buildServer } from '../../api/server.js'
import { createLogger } from '../../api/logger.js'
import { WindowCounter } from '../../api/rate-limit/window-counter.js'
import { REQUEST_COUNTS_BUCKET } from '../../api/rate-limit/replicated-counts.js'
import type { RateLimits } from '../../api/rate-limit/rate-limits.js'
import { SignInLinkRepository } from '../../api/console/sign-in-link-repository.js'
import { ConsoleSession, cookieFrom } from '../console/console-client.js'
import { startApi } from '../harness/api.js'
import { eventually } from '../harness/eventually.js'
import { startNats } from '../harness/nats.js'
import type { Teardown } from '../harness/scratch.js'

const connections: NatsConnection[] = []
t.teardown(() => Promise.all(connections.map((c) => c.close())))

async function natsConnectionTo(url: string): Promise<NatsConnection> {
  const nats = await connect({ servers: url })
  connections.push(nats)
  return nats
}

async function natsConnection(t: Teardown): Promise<NatsConnection> {
  return natsConnectionTo((await startNats(t)).url)
}

t.test('rate limits per API key', async (t) => {
  let now = new Date('2026-03-01T12:00:15Z')
  const clock = () => now
  const rateLimits = { free: 3, trial: 3, growth: 3, business: 5 }
  const nats = await natsConnection(t)
  const api = await startApi(t, { clock, rateLimits, nats })
  const get = (key: string, app = api.app) => app.inject({ method: 'GET', url: '/api/v1/webhook-config', headers: { 'x-api-key': key } })
  /** Another API replica on the same store and NATS server, with its own NATS connection as another pod's would be. */
  const startReplica = async (t: Teardown, limits: RateLimits) => {
    const replica = await buildServer({ logger: createLogger('test', 'silent'), app: { db: api.db, secretBox: api.secretBox, s3: api.s3, s3Bucket: api.s3Bucket, clock, rateLimits: limits, nats: await natsConnectionTo(nats.getServer()) } })
    t.teardown(() => replica.close())
    return replica
  }
  const otherReplica = (t: Teardown) => startReplica(t, rateLimits)

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

  t.test('the next window lets the key in again and finished windows expire on their own', async (t) => {
    now = new Date('2026-03-01T12:02:59Z')
    const { api_key } = await api.createAccount('free')
    for (let i = 0; i < 3; i++) await get(api_key)
    const limited = await get(api_key)
    t.equal(limited.statusCode, 429)
    t.equal(limited.headers['retry-after'], '1')
    now = new Date('2026-03-01T12:03:00Z')
    t.not((await get(api_key)).statusCode, 429)
    const bucket = await nats.jetstream().views.kv(REQUEST_COUNTS_BUCKET)
    t.equal((await bucket.status()).ttl, 120_000, 'counters live two windows, then the server drops them')
  })

  t.test('limits follow the plan', async (t) => {
    now = new Date('2026-03-01T12:04:00Z')
    const { api_key } = await api.createAccount('business')
    for (let i = 0; i < 5; i++) t.not((await get(api_key)).statusCode, 429)
    t.equal((await get(api_key)).statusCode, 429, 'the sixth request is over the Business limit of 5')
  })

  t.test('two replicas together admit at least the limit and at most twice it, then both refuse', async (t) => {
    now = new Date('2026-03-01T12:05:00Z')
    const replica = await otherReplica(t)
    const { api_key } = await api.createAccount('free')
    // Free's limit is 3; the documented bound with N replicas is N × limit (docs/api/plans-and-limits.md).
    const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => get(api_key, i % 2 === 0 ? api.app : replica)))
    const admitted = answers.filter((res) => res.statusCode !== 429).length
    t.ok(admitted >= 3, `${admitted} admitted: at least the limit`)
    t.ok(admitted <= 2 * 3, `${admitted} admitted: at most 2 replicas × the limit`)
    for (const refused of answers.filter((res) => res.statusCode === 429)) t.equal(refused.json().error, 'RATE_LIMITED')
    // Once each has heard the other's count, neither admits the key again this minute.
    for (const app of [api.app, replica]) {
      await eventually('the replica refusing the key', async () => (await get(api_key, app)).statusCode === 429)
      for (let i = 0; i < 5; i++) t.equal((await get(api_key, app)).statusCode, 429)
    }
  })

  t.test('a replica counts what the others admitted, heard in the background', async (t) => {
    now = new Date('2026-03-01T12:05:30Z')
    const roomy = { ...rateLimits, business: 1000 }
    const first = await startReplica(t, roomy)
    const second = await startReplica(t, roomy)
    const { api_key } = await api.createAccount('business')
    for (let i = 0; i < 10; i++) t.not((await get(api_key, first)).statusCode, 429)
    // The second replica's own requests count 1, 2, 3…; once it has heard the first's 10, its remaining is 10 lower.
    let own = 0
    await eventually("the second replica hearing the first's count", async () => {
      const res = await get(api_key, second)
      own++
      return res.headers['x-ratelimit-remaining'] === String(1000 - 10 - own)
    })
    let firstOwn = 10
    await eventually("the first replica hearing the second's count", async () => {
      const res = await get(api_key, first)
      firstOwn++
      return res.headers['x-ratelimit-remaining'] === String(1000 - firstOwn - own)
    })
    t.pass('each replica answers from the sum of both counts')
  })

  t.test('the sign-in throttle\'s shared counter counts concurrent hits on several replicas exactly once', async (t) => {
    now = new Date('2026-03-01T12:06:00Z')
    const replicas = await Promise.all([0, 1, 2].map(async () => WindowCounter.open(await natsConnectionTo(nats.getServer()), 60_000)))
    // 3 replicas × 40 concurrent hits on one key: the counts handed out must be 1..120, each once.
    const counts = await Promise.all(Array.from({ length: 120 }, (_, i) => replicas[i % 3]!.hit('key_concurrent', now).then((hit) => hit.count)))
    t.same([...counts].sort((a, b) => a - b), Array.from({ length: 120 }, (_, i) => i + 1))
  })

  t.test('a console session opened with a sign-in link counts against its account', async (t) => {
    now = new Date('2026-03-01T12:07:00Z')
    const { account_id } = await api.createAccount('free')
    const { token } = await new SignInLinkRepository(api.db).issue(account_id, now)
    const signedIn = await api.app.inject({ method: 'POST', url: '/console/api/session/link', payload: { token } })
    t.equal(signedIn.statusCode, 200, signedIn.body)
    const session = new ConsoleSession(api.app, cookieFrom(signedIn), signedIn.json<{ csrf_token: string }>().csrf_token)
    for (let i = 0; i < 3; i++) {
      const res = await session.request('GET', '/api/v1/webhook-config')
      t.equal(res.headers['x-ratelimit-remaining'], String(2 - i), `request ${i + 1} is counted`)
    }
    t.equal((await session.request('GET', '/api/v1/webhook-config')).statusCode, 429)
  })

  t.test('a limit of 0 means unlimited', async (t) => {
    const unlimited = await startApi(t, { clock, rateLimits: { ...rateLimits, free: 0 }, nats })
    const { api_key } = await unlimited.createAccount('free')
    for (let i = 0; i < 6; i++) t.not((await get(api_key, unlimited.app)).statusCode, 429)
  })

  t.test('with every limit at 0 no counter is needed', async (t) => {
    const open = await startApi(t, { clock, rateLimits: { free: 0, trial: 0, growth: 0, business: 0 } })
    const { api_key } = await open.createAccount('free')
    const res = await get(api_key, open.app)
    t.equal(res.statusCode, 404, 'the route answers (no webhook configured yet): nothing failed for want of a counter')
    t.equal(res.headers['x-ratelimit-limit'], undefined)
  })

  t.test('requests without a valid key are refused before they are counted', async (t) => {
    const res = await api.app.inject({ method: 'GET', url: '/api/v1/webhook-config' })
    t.equal(res.statusCode, 401)
  })
})
