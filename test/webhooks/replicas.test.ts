import t from 'tap'
import type { SendResult, Sender } from '../../api/webhooks/webhook-sender.js'
import { WebhookSender } from '../../api/webhooks/webhook-sender.js'
import type { WebhookRequest } from '../../api/webhooks/webhook-request.js'
import { startReceiver, startWorld, timesEachAttempt, until } from './world.js'

/*
 * Deliverer replicas on one database and one completion stream: each attempt
 * of each delivery reaches the receiver exactly once, also when a replica
 * stops in the middle of an attempt and another takes its delivery over.
 */

/**
 * Sends for real, then keeps the answer until released: a deliverer that
 * stopped after its request went out and before it heard how it ended.
 */
class AnswersHeldBack implements Sender {
  readonly #real = new WebhookSender({ allowPrivateNetworks: true, timeoutMs: 2_000 })
  #release: () => void = () => undefined
  readonly #released = new Promise<void>((resolve) => (this.#release = resolve))

  async send(url: string, webhook: WebhookRequest): Promise<SendResult> {
    const result = await this.#real.send(url, webhook)
    await this.#released
    return result
  }

  /** A stopped process cuts nothing short. */
  close(): void {}

  release(): void {
    this.#release()
    this.#real.close()
  }
}

t.test('two deliverers send every attempt of every delivery exactly once', async (t) => {
  const world = await startWorld(t)
  const receiver = await startReceiver(t)
  // Every delivery's first attempt fails, its second succeeds.
  receiver.behave((req, r) => r.writeHead(req.headers['x-webhook-attempt'] === '1' ? 500 : 200).end())
  // Per-command URLs: twelve failures in a row would otherwise disable an account webhook.
  const { api_key } = await world.api.createAccount('business')
  const replicas = [await world.deliverer(), await world.deliverer()]
  const ids: string[] = []
  for (let i = 0; i < 12; i++) ids.push(await world.submit(api_key, { webhook_url: receiver.url }))
  const failedAt = world.time.now
  await Promise.all(ids.map((id) => world.complete(id)))
  await until('every first attempt', () => receiver.received.length === ids.length)
  await world.eventsHandled()
  // Both replicas look for the twelve retries at the same moment.
  world.time.advanceTo(failedAt + 5_000)
  for (const replica of replicas) replica.nudge()
  await until('every second attempt', () => receiver.received.length === ids.length * 2)
  await world.drained()
  const times = timesEachAttempt(receiver.received)
  const expected = ids.flatMap((id) => [`whd_${id}#1`, `whd_${id}#2`])
  t.same([...times.keys()].sort(), expected.sort(), 'attempts 1 and 2 of every delivery')
  t.same([...times.values()].filter((n) => n !== 1), [], 'none of them twice')
})

t.test('a deliverer that stops during an attempt loses the delivery when its lease ends; another takes it over and sends nothing twice', async (t) => {
  const world = await startWorld(t)
  const receiver = await startReceiver(t)
  const { api_key } = await world.api.createAccount('free')
  await world.putWebhook(api_key, { url: receiver.url })
  const leaseMs = 60_000
  const heldBack = new AnswersHeldBack()
  t.teardown(() => heldBack.release())
  const first = await world.deliverer({ sender: heldBack, leaseMs })
  const commandId = await world.submit(api_key)
  const takenAt = world.time.now
  await world.complete(commandId)
  await until('attempt 1 at the receiver', () => receiver.received.length === 1)
  // Stopped mid-attempt: it takes no more work, and attempt 1 has no logged end.
  const stopped = first.stop()

  await world.deliverer({ leaseMs })
  await until('the other deliverer waiting for the lease to end', () => world.time.deadlines().includes(takenAt + leaseMs))
  world.time.advanceTo(takenAt + leaseMs)
  // Attempt 2 is due 5 s after the lease of attempt 1 ended, when the other deliverer took over.
  const wake = takenAt + leaseMs + 5_000
  await until('attempt 2 scheduled 5 s after the takeover', () => world.time.deadlines().includes(wake))
  t.equal(receiver.received.length, 1, 'attempt 1 was not sent again')
  world.time.advanceTo(wake)
  await until('attempt 2', () => receiver.received.length === 2)

  // The stopped deliverer hears back at last: its late writes change nothing.
  heldBack.release()
  await stopped
  await world.drained()
  t.same(Object.fromEntries(timesEachAttempt(receiver.received)), { [`whd_${commandId}#1`]: 1, [`whd_${commandId}#2`]: 1 }, 'each attempt once')
  const log = await world.api.app.inject({ method: 'GET', url: '/api/v1/webhook-deliveries', headers: { 'x-api-key': api_key } })
  t.match(log.json().deliveries, [
    { attempt: 2, outcome: 'success' },
    { attempt: 1, outcome: 'failure', status_code: null, error: /^abandoned/ },
  ])
  t.equal(log.json().deliveries.length, 2, 'one entry per attempt')
  const config = await world.api.app.inject({ method: 'GET', url: '/api/v1/webhook-config', headers: { 'x-api-key': api_key } })
  t.match(config.json(), { is_active: true, consecutive_failures: 0 }, 'the success after the takeover ended the failure run')
})
