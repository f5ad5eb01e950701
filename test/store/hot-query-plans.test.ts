import { randomBytes } from 'node:crypto'
import type { CommandStartedEvent, Document } from 'mongodb'
import t from 'tap'
import { startApi } from '../harness/api.js'
import { expiryFields } from '../../api/files/retention.js'
import { queryPlan, usesIndex, usesIndexOn } from './query-plans.js'

/*
 * Every query a client's hottest calls make is served by an index: the
 * queries are the ones the repositories really send (seen through the
 * driver's command monitoring while the API answers HTTP calls), and each is
 * explained against the store. A full scan here grows with every command ever
 * stored (stock FerretDB 1.24 scanned for all of them: docs/adr/0001).
 */

/** The collections whose lookups a client's request waits on. */
const HOT = new Set(['accounts', 'api_keys', 'commands', 'files', 'presets'])

t.test("the API's hot queries use indexes", async (t) => {
  const seen: { collection: string; filter: Document; sort?: Document }[] = []
  // Keys are read once and then cached per process (api/accounts/key-cache.ts): the key's
  // lookup comes with the first request, before the GETs below.
  const keyLookups: typeof seen = []
  const api = await startApi(t, {}, { monitorCommands: true })
  api.client.on('commandStarted', (event: CommandStartedEvent) => {
    const collection = event.command[event.commandName]
    if (event.commandName !== 'find' || !HOT.has(collection)) return
    const query = { collection, filter: event.command.filter ?? {}, sort: event.command.sort }
    seen.push(query)
    if (collection === 'api_keys') keyLookups.push(query)
  })
  const account = await api.createAccount('business')
  const headers = { 'x-api-key': account.api_key }
  // Other accounts' records, so a scan and a search return different row counts.
  for (let i = 0; i < 3; i++) {
    const other = await api.createAccount('free')
    await api.app.inject({ method: 'POST', url: '/api/v1/presets', headers: { 'x-api-key': other.api_key }, payload: { name: `p${i}`, ffmpeg_command: 'ffmpeg -i {{in_v}} {{out_v}}', input_file_keys: ['in_v'], output_file_definitions: { out_v: 'o.mp4' } } })
  }

  const submitted = await api.app.inject({
    method: 'POST',
    url: '/api/v1/run-ffmpeg-command',
    headers,
    payload: { input_files: { in_v: 'https://media.example.com/a.mp4' }, output_files: { out_v: 'o.mp4' }, ffmpeg_command: 'ffmpeg -i {{in_v}} {{out_v}}' },
  })
  t.equal(submitted.statusCode, 200, submitted.body)
  const commandId = submitted.json<{ command_id: string }>().command_id
  const boundary = `----ffkube${randomBytes(6).toString('hex')}`
  const uploaded = await api.app.inject({
    method: 'POST',
    url: '/api/v1/files/upload',
    headers: { ...headers, 'content-type': `multipart/form-data; boundary=${boundary}` },
    payload: `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\nContent-Type: text/plain\r\n\r\nhello\r\n--${boundary}--\r\n`,
  })
  t.equal(uploaded.statusCode, 200, uploaded.body)
  const fileId = uploaded.json<{ file_id: string }>().file_id

  seen.length = 0
  const calls = [`/api/v1/commands/${commandId}`, '/api/v1/commands?limit=10', '/api/v1/commands?status=QUEUED', `/api/v1/files/${fileId}`, '/api/v1/files', '/api/v1/presets']
  for (const url of calls) {
    const res = await api.app.inject({ method: 'GET', url, headers })
    t.equal(res.statusCode, 200, `${url}: ${res.body}`)
  }

  t.ok(keyLookups.length > 0, 'the key was looked up')
  const collections = new Set(seen.map((query) => query.collection))
  for (const name of ['commands', 'files', 'presets']) t.ok(collections.has(name), `the calls queried ${name}`)
  for (const query of [...keyLookups.slice(0, 1), ...seen]) {
    const plan = await queryPlan(api.db.collection(query.collection), query.filter, query.sort)
    t.ok(usesIndex(plan), `${query.collection} ${JSON.stringify(query.filter)} is served by an index`, { plan })
  }
})

t.test("the retention sweep's query uses an index", async (t) => {
  const seen: { filter: Document; sort?: Document }[] = []
  const api = await startApi(t, {}, { monitorCommands: true })
  api.client.on('commandStarted', (event: CommandStartedEvent) => {
    if (event.commandName === 'find' && event.command.find === 'files') seen.push({ filter: event.command.filter ?? {}, sort: event.command.sort })
  })
  const files = api.db.collection('files')
  // Live and deleted files, expiring on several days or never, so a scan and a search return different row counts.
  const at = new Date('2026-03-01T00:00:00Z')
  for (let i = 0; i < 12; i++) {
    const expiry = i < 8 ? expiryFields(new Date(at.getTime() + (i % 3) * 86_400_000)) : expiryFields(null)
    await files.insertOne({ _id: `file_${i}` as never, account_id: 'a', is_deleted: i % 2 === 0, storage_location: 'INTERNAL', ...expiry, created_at: at })
  }
  const due = await api.app.files.expiredFiles(['2026-02-28', '2026-03-01', '2026-03-02'], new Date('2026-03-02T00:00:00Z'), 100)
  t.same(due.map((file) => file._id), ['file_3', 'file_1', 'file_7'], 'the live files due by then, earliest first, those expiring at that very moment among them')
  t.equal(seen.length, 1, 'the sweep sent one query')
  const plan = await queryPlan(files, seen[0]!.filter, seen[0]!.sort)
  t.ok(usesIndex(plan), `files ${JSON.stringify(seen[0]!.filter)} is served by an index`, { plan })
  // Not the live files' index: found by its due days, a round reads only what they hold.
  t.ok(usesIndexOn(plan, 'expires_on'), 'by the index of expires_on', { plan })
})
