import t from 'tap'
import { DELAY_BEFORE_ATTEMPT_MS } from '../../api/webhook-delivery/retry-schedule.js'
import { nextWake, settle, startReceiver, startWorld, until, type World } from './world.js'


async function webhookConfig(world: World, apiKey: string) {
  const res = await world.api.app.inject({ method: 'GET', url: '/api/v1/webhook-config', headers: { 'x-api-key': apiKey } })
  return res.json<{ is_active: boolean; disabled_at: string | null; consecutive_failures: number }>()
}

t.test('the whole schedule runs with the spec\'s exact delays, then the account webhook disables itself until PUT', async (t) => {
  const world = await startWorld(t)
  const receiver = await startReceiver(t)
  receiver.behave((_q, r) => r.writeHead(500).end())
  const { api_key } = await world.api.createAccount('free')
  await world.putWebhook(api_key, { url: receiver.url, secret: 's' })
  await world.deliverer()
  const commandId = await world.submit(api_key)
  await world.complete(commandId)
  await until('attempt 1', () => receiver.received.length === 1)
  const start = world.time.now
  for (let attempt = 2; attempt <= 8; attempt++) {
    const failedAt = Number(receiver.received[attempt - 2]!.headers['x-webhook-timestamp'])
    const wake = await nextWake(world, `the wait before attempt ${attempt}`)
    t.equal(wake - failedAt, DELAY_BEFORE_ATTEMPT_MS[attempt - 1], `attempt ${attempt} is due ${DELAY_BEFORE_ATTEMPT_MS[attempt - 1]} ms after the failure before it`)
    // One millisecond early: nothing may go yet.
    world.time.advanceTo(wake - 1)
    await settle(50)
    t.equal(receiver.received.length, attempt - 1, `attempt ${attempt} not sent early`)
    world.time.advanceTo(wake)
    await until(`attempt ${attempt}`, () => receiver.received.length === attempt)
    const got = receiver.received[attempt - 1]!
    t.equal(got.headers['x-webhook-attempt'], String(attempt))
    t.equal(got.headers['x-webhook-id'], `whd_${commandId}`, 'the same delivery id on every retry')
    t.equal(Number(got.headers['x-webhook-timestamp']), wake)
  }
  t.equal(world.time.now - start, 5_000 + 300_000 + 1_800_000 + 7_200_000 + 18_000_000 + 36_000_000 * 2, 'about 27.6 hours of schedule')
  const off = await until('auto-disable', async () => {
    const c = await webhookConfig(world, api_key)
    return c.is_active ? null : c
  })
  t.equal(off.consecutive_failures, 8)
  t.ok(off.disabled_at, 'disabled_at recorded')
  t.notOk(world.time.deadlines().some((d) => d > world.time.now && d - world.time.now <= 10 * 3600_000), 'no ninth attempt scheduled')

  // Disabled: the next completion is not delivered.
  await world.complete(await world.submit(api_key))
  await settle(500)
  t.equal(receiver.received.length, 8, 'no delivery while disabled')

  // PUT re-enables and resets the counter; deliveries resume.
  await world.putWebhook(api_key, { url: receiver.url, secret: 's' })
  t.match(await webhookConfig(world, api_key), { is_active: true, disabled_at: null, consecutive_failures: 0 })
  receiver.behave((_q, r) => r.writeHead(204).end())
  const again = await world.submit(api_key)
  await world.complete(again)
  await until('delivery after PUT', () => receiver.received.length === 9)
  t.equal(JSON.parse(receiver.received[8]!.body).data.command_id, again)
})

t.test('consecutive failures count across commands and a success anywhere resets them', async (t) => {
  const world = await startWorld(t)
  const receiver = await startReceiver(t)
  let failing = true
  receiver.behave((_q, r) => r.writeHead(failing ? 502 : 200).end())
  const { api_key } = await world.api.createAccount('free')
  await world.putWebhook(api_key, { url: receiver.url })
  await world.deliverer()
  for (let i = 1; i <= 3; i++) {
    await world.complete(await world.submit(api_key))
    await until(`failure ${i}`, async () => (await webhookConfig(world, api_key)).consecutive_failures === i)
  }
  failing = false
  await world.complete(await world.submit(api_key))
  await until('the reset', async () => (await webhookConfig(world, api_key)).consecutive_failures === 0)
  // The three failed deliveries still retry (5 s later); their successes keep the count at 0.
  failing = true
  for (let i = 1; i <= 5; i++) {
    await world.complete(await world.submit(api_key))
    await until(`run ${i}`, async () => (await webhookConfig(world, api_key)).consecutive_failures === i)
  }
  t.equal((await webhookConfig(world, api_key)).is_active, true, 'five in a row: still active')
  // The eight retries due at +5 s fail too: the run passes 8 across several commands.
  world.time.advanceTo(await nextWake(world, 'the retries'))
  const off = await until('auto-disable', async () => {
    const c = await webhookConfig(world, api_key)
    return c.is_active ? null : c
  })
  t.equal(off.consecutive_failures, 8)
  await settle(300)
  // Retries claimed before the disable still go; those that come due after it are dropped.
  const sent = receiver.received.map((r) => `${String(r.headers['x-webhook-id'])}#${String(r.headers['x-webhook-attempt'])}`)
  t.ok(sent.length >= 4 + 5 + 3 && sent.length <= 4 + 5 + 8, `between 12 and 17 attempts sent (${sent.length})`)
  t.equal(new Set(sent).size, sent.length, 'none twice')
  world.time.advanceTo(world.time.now + 300_000)
  await until('pending retries dropped as they came due', async () => (await world.api.db.collection('webhook_due').countDocuments({})) === 0)
  await settle(300)
  t.equal(receiver.received.length, sent.length, 'nothing more once disabled')
})

t.test('a deliverer stopped between attempts: a new one continues the schedule and sends nothing twice', async (t) => {
  const world = await startWorld(t)
  const receiver = await startReceiver(t)
  receiver.behave((_q, r, n) => r.writeHead(n <= 2 ? 503 : 200).end())
  const { api_key } = await world.api.createAccount('free')
  await world.putWebhook(api_key, { url: receiver.url })
  const first = await world.deliverer()
  const commandId = await world.submit(api_key)
  await world.complete(commandId)
  await until('attempt 1', () => receiver.received.length === 1)
  const due = await nextWake(world, 'attempt 2 scheduled')
  await first.stop()
  world.time.advanceTo(due + 60_000)
  await settle(300)
  t.equal(receiver.received.length, 1, 'nothing sent while no deliverer runs')
  await world.deliverer()
  await until('attempt 2 by the new deliverer', () => receiver.received.length === 2)
  const wake3 = await nextWake(world, 'attempt 3 scheduled')
  t.equal(wake3 - world.time.now, DELAY_BEFORE_ATTEMPT_MS[2], '5 minutes after attempt 2 failed')
  world.time.advanceTo(wake3)
  await until('attempt 3', () => receiver.received.length === 3)
  await settle(500)
  t.same(receiver.received.map((r) => r.headers['x-webhook-attempt']), ['1', '2', '3'])
  t.same(new Set(receiver.received.map((r) => r.headers['x-webhook-id'])), new Set([`whd_${commandId}`]))
  const log = await world.api.app.inject({ method: 'GET', url: '/api/v1/webhook-deliveries', headers: { 'x-api-key': api_key } })
  t.same(log.json().deliveries.map((d: { attempt: number; outcome: string }) => [d.attempt, d.outcome]), [[3, 'success'], [2, 'failure'], [1, 'failure']])
})

t.test('two deliverer replicas send every attempt exactly once', async (t) => {
  const world = await startWorld(t)
  const receiver = await startReceiver(t)
  // Every delivery's first attempt fails, its second succeeds.
  receiver.behave((req, r) => r.writeHead(req.headers['x-webhook-attempt'] === '1' ? 500 : 200).end())
  // Per-command URLs: twelve failures in a row would otherwise disable an account webhook.
  const { api_key } = await world.api.createAccount('business')
  await world.deliverer()
  await world.deliverer()
  const ids: string[] = []
  for (let i = 0; i < 12; i++) ids.push(await world.submit(api_key, { webhook_url: receiver.url }))
  await Promise.all(ids.map((id) => world.complete(id)))
  await until('every first attempt', () => receiver.received.length === ids.length)
  // Both replicas wake at the same moment for the same twelve retries.
  await until('both replicas waiting', () => world.time.deadlines().filter((d) => d === world.time.now + 5_000).length >= 2)
  world.time.advanceTo(world.time.now + 5_000)
  await until('every second attempt', () => receiver.received.length === ids.length * 2)
  await settle(500)
  const sent = receiver.received.map((r) => `${String(r.headers['x-webhook-id'])}#${String(r.headers['x-webhook-attempt'])}`)
  t.equal(sent.length, 24)
  t.equal(new Set(sent).size, 24, 'no attempt sent twice')
  const claims = await world.api.db.collection('webhook_attempt_claims').countDocuments({})
  t.equal(claims, 24)
})

t.test('an attempt whose deliverer died after claiming it counts as failed after the lease and is not sent again', async (t) => {
  const world = await startWorld(t)
  const receiver = await startReceiver(t)
  const { api_key, account_id } = await world.api.createAccount('free')
  await world.putWebhook(api_key, { url: receiver.url })
  const commandId = await world.submit(api_key)
  // A deliverer claimed attempt 1 and died before logging how it ended.
  const claimedAt = new Date(world.time.now)
  await world.api.db.collection('webhook_attempt_claims').insertOne({
    _id: `whd_${commandId}:1` as never,
    delivery_id: `whd_${commandId}`,
    command_id: commandId,
    account_id,
    target: 'account',
    url: `${receiver.url}/`,
    attempt: 1,
    config_revision: null,
    claimed_at: claimedAt,
  })
  await world.deliverer({ leaseMs: 1_000 })
  await world.complete(commandId)
  await settle(300)
  t.equal(receiver.received.length, 0, 'within the lease the attempt is left to its claimer')
  world.time.advanceTo(claimedAt.getTime() + 1_000)
  // JetStream brings the event back after the nak delay (the lease, in real time).
  const wake = await nextWake(world, 'attempt 2 scheduled')
  t.equal(wake, claimedAt.getTime() + 1_000 + 5_000, 'attempt 2 is 5 s after the abandoned attempt\'s lease ended')
  t.equal(receiver.received.length, 0, 'attempt 1 is not sent again')
  world.time.advanceTo(wake)
  await until('attempt 2', () => receiver.received.length === 1)
  t.equal(receiver.received[0]!.headers['x-webhook-attempt'], '2')
  // The log entry is written after the receiver answered.
  const deliveries = await until('attempt 2 logged', async () => {
    const log = await world.api.app.inject({ method: 'GET', url: '/api/v1/webhook-deliveries', headers: { 'x-api-key': api_key } })
    const list = log.json<{ deliveries: unknown[] }>().deliveries
    return list.length === 2 ? list : null
  })
  t.match(deliveries, [
    { attempt: 2, outcome: 'success' },
    { attempt: 1, outcome: 'failure', status_code: null, error: /^abandoned/ },
  ])
})
