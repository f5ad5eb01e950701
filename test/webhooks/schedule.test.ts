import t from 'tap'
import { nextWake, runOut, startReceiver, startWorld, until, type World } from './world.js'

const SECOND = 1_000
const MINUTE = 60 * SECOND
const HOUR = 60 * MINUTE
/** The spec's delays before attempts 2 to 8, each counted from the failure before it. */
const SPEC_DELAYS_MS = [5 * SECOND, 5 * MINUTE, 30 * MINUTE, 2 * HOUR, 5 * HOUR, 10 * HOUR, 10 * HOUR]

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
  const deliverer = await world.deliverer()
  const commandId = await world.submit(api_key)
  await world.complete(commandId)
  await until('attempt 1', () => receiver.received.length === 1)
  const start = world.time.now
  for (let attempt = 2; attempt <= 8; attempt++) {
    // The fake clock stands still during an attempt: it fails at the time it was sent.
    const failedAt = Number(receiver.received[attempt - 2]!.headers['x-webhook-timestamp'])
    const delay = SPEC_DELAYS_MS[attempt - 2]!
    const wake = await nextWake(world, `the wait before attempt ${attempt}`)
    t.equal(wake - failedAt, delay, `attempt ${attempt} is due ${delay} ms after the failure before it`)
    // One millisecond early, a look at what is due (forced by a nudge) sends nothing: the
    // deliverer goes back to sleep towards the same due time.
    world.time.advanceTo(wake - 1)
    deliverer.nudge()
    await until(`the early look before attempt ${attempt} over`, () => world.time.deadlines().includes(wake))
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
  await world.drained('the completion while disabled handled')
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
  // The three failed deliveries wait for their retries (5 s later); five more fail meanwhile.
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
  // Retries claimed before the disable still go; those that come due after it are dropped.
  await runOut(world)
  const sent = receiver.received.map((r) => `${String(r.headers['x-webhook-id'])}#${String(r.headers['x-webhook-attempt'])}`)
  t.ok(sent.length >= 4 + 5 + 3 && sent.length <= 4 + 5 + 8, `between 12 and 17 attempts sent (${sent.length})`)
  t.equal(new Set(sent).size, sent.length, 'none twice')
  const retries = sent.filter((key) => !key.endsWith('#1'))
  t.ok(retries.every((key) => key.endsWith('#2')), 'no delivery got past its second attempt: each was dropped once the webhook was off')
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
  await world.deliverer()
  await until('attempt 2 by the new deliverer', () => receiver.received.length === 2)
  const wake3 = await nextWake(world, 'attempt 3 scheduled')
  t.equal(wake3 - world.time.now, 5 * MINUTE, '5 minutes after attempt 2 failed')
  world.time.advanceTo(wake3)
  await until('attempt 3', () => receiver.received.length === 3)
  await world.drained('the delivery over')
  t.same(receiver.received.map((r) => r.headers['x-webhook-attempt']), ['1', '2', '3'], 'each attempt once: the stopped deliverer sent nothing more')
  t.same(new Set(receiver.received.map((r) => r.headers['x-webhook-id'])), new Set([`whd_${commandId}`]))
  const log = await world.api.app.inject({ method: 'GET', url: '/api/v1/webhook-deliveries', headers: { 'x-api-key': api_key } })
  t.same(log.json().deliveries.map((d: { attempt: number; outcome: string }) => [d.attempt, d.outcome]), [[3, 'success'], [2, 'failure'], [1, 'failure']])
})
