import { readFile } from 'node:fs/promises'
import t from 'tap'
import { ApiError, commandEvents, createFfkubeClient, expectData } from '../../client/index.js'
import { CLIENT_TYPES_PATH, generateClientTypes } from '../../scripts/client-types.js'
import { startApi } from '../harness/api.js'
import { checkoutPath } from '../harness/checkout.js'

t.test('typed client', async (t) => {
  const api = await startApi(t)
  const baseUrl = await api.app.listen({ host: '127.0.0.1', port: 0 })
  const { api_key } = await api.createAccount('business')

  t.test('the committed client/openapi.d.ts is what the generator makes of the served /openapi.json', async (t) => {
    const served = await fetch(`${baseUrl}/openapi.json`)
    t.equal(served.status, 200)
    const generated = await generateClientTypes((await served.json()) as Parameters<typeof generateClientTypes>[0])
    const committed = await readFile(checkoutPath(CLIENT_TYPES_PATH), 'utf8')
    // t.equal would print a 4000-line diff; the first differing line says enough.
    const firstDifference = generated.split('\n').findIndex((line, i) => line !== committed.split('\n')[i])
    t.ok(
      generated === committed,
      generated === committed
        ? 'the generated types match'
        : `${CLIENT_TYPES_PATH} is stale (first difference at line ${firstDifference + 1}): run \`npm run -s generate:client\` and commit the result`,
    )
  })

  t.test('a request and its answer go through the generated types, over HTTP', async (t) => {
    const client = createFfkubeClient({ baseUrl: `${baseUrl}/`, apiKey: api_key })
    const created = expectData(
      await client.POST('/api/v1/presets', {
        body: { name: 'Half', input_file_keys: ['in_video'], output_file_definitions: { out_half: 'half.mp4' }, ffmpeg_command: 'ffmpeg -i {{in_video}} -vf scale=iw/2:-2 {{out_half}}' },
      }),
    )
    t.match(created, { name: 'Half', command_type: 'FFMPEG_COMMAND', is_system: false })
    const fetched = expectData(await client.GET('/api/v1/presets/{presetId}', { params: { path: { presetId: created.preset_id } } }))
    t.equal(fetched.preset_id, created.preset_id)
    const page = expectData(await client.GET('/api/v1/commands', { params: { query: { limit: 5 } } }))
    t.same(page, { commands: [], limit: 5, offset: 0 })
  })

  t.test("an error answer becomes an ApiError carrying the API's code and message", async (t) => {
    const anonymous = createFfkubeClient({ baseUrl, apiKey: 'ffsk_' + '0'.repeat(64) })
    const unauthorized = await anonymous.GET('/api/v1/commands', {})
    t.equal(unauthorized.response.status, 401)
    t.throws(() => expectData(unauthorized), { name: 'ApiError', status: 401, code: 'UNAUTHORIZED' })
    const client = createFfkubeClient({ baseUrl, apiKey: api_key })
    const invalid = await client.PUT('/api/v1/webhook-config', { body: { url: 'not a url' } })
    try {
      expectData(invalid)
      t.fail('expectData threw nothing')
    } catch (err) {
      t.ok(err instanceof ApiError)
      t.match(err, { status: 422, code: 'VALIDATION_ERROR', message: /url/ })
    }
  })

  t.test('commandEvents reads the event stream with the key header; a consumer that stops closes it', async (t) => {
    const client = createFfkubeClient({ baseUrl, apiKey: api_key })
    const missing = commandEvents('0b0e4f6c-0000-4000-8000-000000000000', { baseUrl, apiKey: api_key })
    await t.rejects(missing.next(), { name: 'ApiError', status: 404, code: 'NOT_FOUND' })
    // No executor runs beside this API, so the command stays QUEUED; test/cli follows one to its end.
    const { command_id } = expectData(
      await client.POST('/api/v1/run-ffmpeg-command', {
        body: { input_files: { in_video: 'https://example.com/a.mp4' }, output_files: { out_a: 'a.mp4' }, ffmpeg_command: 'ffmpeg -i {{in_video}} {{out_a}}' },
      }),
    )
    const seen = []
    for await (const event of commandEvents(command_id, { baseUrl, apiKey: api_key })) {
      seen.push(event)
      break
    }
    t.match(seen, [{ id: '0', command: { command_id, status: 'QUEUED', progress: null } }])
  })
})
