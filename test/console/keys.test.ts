import t from 'tap'
import { startApi } from '../harness/api.js'
import { ConsoleSession } from './console-client.js'

t.test('API keys in the console', async (t) => {
  const api = await startApi(t)
  const account = await api.createAccount('business')
  const other = await api.createAccount('free')
  const session = await ConsoleSession.signIn(api.app, account.api_key)
  const commands = (apiKey: string) => api.app.inject({ method: 'GET', url: '/api/v1/commands', headers: { 'x-api-key': apiKey } })

  t.test('a key created in the console works against the API at once, and the list shows it masked', async (t) => {
    const created = await session.request('POST', '/console/api/keys')
    t.equal(created.statusCode, 201, created.body)
    const key = created.json()
    t.match(key.api_key, /^ffsk_[0-9a-f]{64}$/)
    t.equal(key.masked, `ffsk_…${key.api_key.slice(-4)}`)
    t.equal((await commands(key.api_key)).statusCode, 200)
    const list = await session.request('GET', '/console/api/keys')
    t.equal(list.statusCode, 200)
    t.equal(list.headers['cache-control'], 'no-store')
    const keys = list.json().keys
    t.same(keys.map((k: { key_id: string }) => k.key_id), [key.key_id, account.key_id], 'newest first')
    t.notOk(list.body.includes(key.api_key) || list.body.includes(account.api_key), 'no key in clear in the list')
    t.equal(keys[1].masked, `ffsk_…${account.api_key.slice(-4)}`)
  })

  t.test('copying opens the sealed key on each request', async (t) => {
    const revealed = await session.request('POST', `/console/api/keys/${account.key_id}/reveal`)
    t.equal(revealed.statusCode, 200)
    t.same(revealed.json(), { key_id: account.key_id, api_key: account.api_key })
    t.equal(revealed.headers['cache-control'], 'no-store')
    const withoutToken = await session.request('POST', `/console/api/keys/${account.key_id}/reveal`, { csrf: false })
    t.equal(withoutToken.statusCode, 403, 'needs the CSRF token: it is a POST')
  })

  t.test("another account's key is not found, and a malformed id is a 400 naming it", async (t) => {
    t.equal((await session.request('POST', `/console/api/keys/${other.key_id}/reveal`)).statusCode, 404)
    t.equal((await session.request('DELETE', `/console/api/keys/${other.key_id}`)).statusCode, 404)
    t.equal((await commands(other.api_key)).statusCode, 200, "the other account's key still works")
    const malformed = await session.request('DELETE', '/console/api/keys/nope')
    t.equal(malformed.statusCode, 400)
    t.match(malformed.json().message, /keyId/)
  })

  t.test('a revoked key gets 401 on its next call, cannot be copied, and stays listed as revoked', async (t) => {
    const key = (await session.request('POST', '/console/api/keys')).json()
    t.equal((await commands(key.api_key)).statusCode, 200)
    const revoked = await session.request('DELETE', `/console/api/keys/${key.key_id}`)
    t.equal(revoked.statusCode, 200)
    t.match(revoked.json(), { key_id: key.key_id, revoked: true, revoked_at: String })
    const next = await commands(key.api_key)
    t.equal(next.statusCode, 401)
    t.equal(next.json().message, 'invalid or revoked API key')
    const again = await session.request('DELETE', `/console/api/keys/${key.key_id}`)
    t.equal(again.json().revoked_at, revoked.json().revoked_at, 'revoking again keeps the first time')
    t.equal((await session.request('POST', `/console/api/keys/${key.key_id}/reveal`)).statusCode, 409)
    const listed = (await session.request('GET', '/console/api/keys')).json().keys.find((k: { key_id: string }) => k.key_id === key.key_id)
    t.equal(listed.revoked_at, revoked.json().revoked_at)
  })

  t.test('revoking the key a session was opened with ends that session; a link session lives on', async (t) => {
    const key = (await session.request('POST', '/console/api/keys')).json()
    const opened = await ConsoleSession.signIn(api.app, key.api_key)
    t.equal((await opened.request('GET', '/console/api/session')).statusCode, 200)
    await session.request('DELETE', `/console/api/keys/${key.key_id}`)
    t.equal((await opened.request('GET', '/console/api/session')).statusCode, 401)
    t.equal((await opened.request('GET', '/api/v1/commands')).statusCode, 401)
    t.equal((await session.request('GET', '/console/api/session')).statusCode, 200, 'the session of another key is unaffected')
  })
})

t.test('the console\'s usage is the last 30 UTC days by day, with the storage quota, as GET /api/v1/usage answers it', async (t) => {
  let now = new Date('2026-11-20T10:00:00Z')
  const api = await startApi(t, { clock: () => now })
  const account = await api.createAccount('business')
  const session = await ConsoleSession.signIn(api.app, account.api_key)
  const body = { input_files: { in_v: 'https://media.example.com/a.mp4' }, output_files: { out_v: 'o.mp4' }, ffmpeg_command: 'ffmpeg -i {{in_v}} {{out_v}}' }
  const submit = () => session.request('POST', '/api/v1/run-ffmpeg-command', { payload: body })

  now = new Date('2026-10-01T10:00:00Z')
  t.equal((await submit()).statusCode, 200, 'a command older than the window')
  now = new Date('2026-11-20T10:00:00Z')
  const ids = [(await submit()).json().command_id, (await submit()).json().command_id]
  // The status projector's writes, as a finished run leaves them.
  await api.db.collection('commands').updateOne({ _id: ids[0] }, { $set: { status: 'SUCCESS', total_processing_seconds: 4.5, ffmpeg_command_run_seconds: 3 } })
  await api.db.collection('files').insertOne({
    _id: 'file_usage', account_id: account.account_id, command_id: ids[0], status: 'STORED', storage_location: 'INTERNAL', is_deleted: false, deleted_at: null, size_mbytes: 2, created_at: now,
  } as never)

  const usage = await session.request('GET', '/console/api/usage')
  t.equal(usage.statusCode, 200, usage.body)
  const report = usage.json()
  t.match(report, {
    days: 30,
    from: '2026-10-22T00:00:00.000Z',
    to: now.toISOString(),
    totals: { commands: 2, commands_succeeded: 1, commands_failed: 0, ffmpeg_seconds: 3, total_seconds: 4.5 },
    // The record was written past the upload route, so the quota's count never saw it: the by-day figures come from the records.
    storage: { stored_bytes: 0, quota_bytes: 1024 ** 4 },
  })
  t.equal(report.by_day.length, 30)
  t.same(report.by_day.at(-1), { date: '2026-11-20', commands: 2, commands_succeeded: 1, commands_failed: 0, ffmpeg_seconds: 3, total_seconds: 4.5, bytes_stored: 2 * 1024 * 1024, files_stored: 1 })
  const api1 = await session.request('GET', '/api/v1/usage?days=30')
  t.same(report, api1.json(), 'what GET /api/v1/usage?days=30 answers')
})
