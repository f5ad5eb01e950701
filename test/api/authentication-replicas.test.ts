import t, { type Test } from 'tap'
import type { CommandStartedEvent } from 'mongodb'
import { eventually } from '../harness/eventually.js'
import { startTwoReplicas } from '../harness/two-replicas.js'

t.test('API keys cached on each of two replicas', async (t) => {
  // A clock that never moves: cached keys never expire, so whatever a replica learns, it learns from the feed.
  const frozen = new Date('2026-03-01T12:00:00Z')
  const { nats, first, second, secondClient } = await startTwoReplicas(t, () => frozen)
  const storeCommands: CommandStartedEvent[] = []
  secondClient.on('commandStarted', (event) => storeCommands.push(event))

  const getCommand = (app: typeof second, key: string) => app.inject({ method: 'GET', url: '/api/v1/commands/cmd_00000000000000000000000000000000', headers: { 'x-api-key': key } })
  const getDestinations = (app: typeof second, key: string) => app.inject({ method: 'GET', url: '/api/v1/storage-destinations', headers: { 'x-api-key': key } })
  /** Polls the second replica until it answers `status`, then checks it keeps answering it. */
  const secondAnswers = async (t: Test, request: () => ReturnType<typeof getCommand>, status: number, what: string) => {
    await eventually(what, async () => (await request()).statusCode === status)
    for (let i = 0; i < 20; i++) t.equal((await request()).statusCode, status, `${what}: request ${i + 1} after`)
  }

  t.test('a replica reads a key from the store once, then one store read per request: the record', async (t) => {
    const { api_key } = await first.createAccount('free')
    t.equal((await getCommand(second, api_key)).statusCode, 404, 'no such command, but the key is good')
    storeCommands.length = 0
    for (let i = 0; i < 10; i++) t.equal((await getCommand(second, api_key)).statusCode, 404)
    const reads = storeCommands.map((event) => `${event.commandName} ${String(event.command[event.commandName])}`)
    t.same(reads, Array.from({ length: 10 }, () => 'find commands'), 'ten requests, ten reads of the command, none of the key or account')
  })

  t.test('a key revoked through one replica gets 401 on the other, and never a 200 after the first 401', async (t) => {
    const { api_key, key_id } = await first.createAccount('business')
    t.equal((await getCommand(second, api_key)).statusCode, 404, 'the second replica has the key cached')
    t.ok(await first.app.accounts.revokeKey(key_id))
    await secondAnswers(t, () => getCommand(second, api_key), 401, 'the revoked key refused by the second replica')
  })

  t.test('a plan changed through one replica is applied by the other', async (t) => {
    const { api_key, account_id } = await first.createAccount('business')
    t.equal((await getDestinations(second, api_key)).statusCode, 200, 'a Business-only route')
    t.ok(await first.app.accounts.setPlan(account_id, 'growth'))
    await secondAnswers(t, () => getDestinations(second, api_key), 403, 'the Business-only route refused on Growth')
  })

  t.test("a plan changed through one replica reaches the other's storage quota, which reads the plan once while it holds", async (t) => {
    const { account_id } = await first.createAccount('business')
    const businessQuota = await second.files.quota.quotaOf(account_id)
    storeCommands.length = 0
    for (let i = 0; i < 5; i++) t.equal(await second.files.quota.quotaOf(account_id), businessQuota)
    t.same(storeCommands.map((event) => event.commandName), [], 'the plan read once, then cached (the clock never moves)')
    t.ok(await first.app.accounts.setPlan(account_id, 'free'))
    await eventually('the free quota on the second replica', async () => (await second.files.quota.quotaOf(account_id)) !== businessQuota)
    const freeQuota = await second.files.quota.quotaOf(account_id)
    t.ok(freeQuota !== null && businessQuota !== null && freeQuota < businessQuota, `free ${freeQuota} < business ${businessQuota}`)
    for (let i = 0; i < 20; i++) t.equal(await second.files.quota.quotaOf(account_id), freeQuota, `read ${i + 1} after`)
  })

  t.test('a replica cut off from NATS stops trusting what it cached', async (t) => {
    const { api_key, key_id } = await first.createAccount('business')
    t.equal((await getCommand(second, api_key)).statusCode, 404, 'the second replica has the key cached')
    await nats.stop!()
    // No replica can hear this revocation: the second must notice it has lost the feed and read the store.
    t.ok(await first.app.accounts.revokeKey(key_id))
    await secondAnswers(t, () => getCommand(second, api_key), 401, 'the revoked key refused by the cut-off replica')
  })
})
