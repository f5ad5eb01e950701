import t from 'tap'
import { startApi } from '../harness/api.js'

t.test('OpenAPI', async (t) => {
  const api = await startApi(t)

  t.test('serves an OpenAPI 3 document generated from the route schemas, without an API key', async (t) => {
    const res = await api.app.inject({ method: 'GET', url: '/openapi.json' })
    t.equal(res.statusCode, 200)
    t.match(res.headers['content-type'], /application\/json/)
    const doc = res.json()
    t.match(doc.openapi, /^3\./)
    t.equal(doc.info.title, 'ffkube media API')
    t.same(doc.components.securitySchemes.apiKey, { type: 'apiKey', in: 'header', name: 'X-API-KEY' })
    t.same(doc.security, [{ apiKey: [] }])
    for (const path of [
      '/api/v1/storage-destinations',
      '/api/v1/storage-destinations/{storageDestinationId}',
      '/api/v1/storage-destinations/{storageDestinationId}/test',
      '/api/v1/webhook-config',
    ]) {
      t.ok(doc.paths[path], `documents ${path}`)
    }
    t.same(Object.keys(doc.paths['/api/v1/webhook-config']).sort(), ['delete', 'get', 'put'])
    const create = doc.paths['/api/v1/storage-destinations'].post
    t.same(create.requestBody.content['application/json'].schema.required.sort(), ['bucket', 'credentials', 'endpoint_url', 'name', 'region'])
    t.ok(create.responses['201'], 'documents the 201 response')
    t.notOk(doc.paths['/healthz'], 'health endpoints are hidden')
    t.notOk(doc.paths['/openapi.json'], 'the document does not list itself')
  })

  t.test('describes the completion webhook: its body and both signature schemes\' headers', async (t) => {
    const doc = (await api.app.inject({ method: 'GET', url: '/openapi.json' })).json()
    const post = doc.webhooks?.commandCompleted?.post
    t.ok(post, 'webhooks.commandCompleted.post is documented')
    const headers = (post.parameters as { name: string; in: string; required: boolean }[]).filter((p) => p.in === 'header')
    const named = (name: string) => headers.find((h) => h.name.toLowerCase() === name)
    for (const name of ['x-webhook-signature', 'x-webhook-id', 'x-webhook-timestamp', 'webhook-id', 'webhook-timestamp', 'webhook-signature']) t.ok(named(name), `documents ${name}`)
    t.equal(named('webhook-signature')?.required, false, 'signatures only come with a secret')
    const body = post.requestBody.content['application/json'].schema
    t.same(body.required.sort(), ['data', 'timestamp'])
    t.same(body.properties.data.required.sort(), doc.paths['/api/v1/commands/{commandId}'].get.responses['200'].content['application/json'].schema.required.sort(), 'data is the GET poll response')
  })

  t.test('every documented path is a route the app serves, under /api/v1 or the console\'s /console/api', async (t) => {
    const doc = (await api.app.inject({ method: 'GET', url: '/openapi.json' })).json()
    for (const [path, methods] of Object.entries(doc.paths as Record<string, Record<string, unknown>>)) {
      t.ok(path.startsWith('/api/v1/') || path.startsWith('/console/api/'), `${path} is under /api/v1 or /console/api`)
      for (const method of Object.keys(methods)) {
        const url = path.replace(/\{[^}]+\}/g, 'x')
        t.ok(api.app.hasRoute({ method: method.toUpperCase() as 'GET', url: path.replace(/\{([^}]+)\}/g, ':$1') }), `${method} ${url}`)
      }
    }
  })

  t.test('serves the browsable docs page at /docs', async (t) => {
    const res = await api.app.inject({ method: 'GET', url: '/docs/' })
    t.equal(res.statusCode, 200)
    t.match(res.headers['content-type'], /text\/html/)
    t.match(res.body, /swagger-ui/i)
  })

  t.test('states every status the spec lists for a route, each with the ErrorResponse shape', async (t) => {
    const doc = (await api.app.inject({ method: 'GET', url: '/openapi.json' })).json()
    // From the spec's endpoint pages; 401 and 429 are on every route ("Any endpoint can return 401 and 429").
    const spec: [string, string, number[]][] = [
      ['post', '/api/v1/run-ffmpeg-command', [200, 400, 401, 403, 404, 409, 422, 429]],
      ['post', '/api/v1/run-chained-ffmpeg-commands', [200, 400, 401, 403, 404, 409, 422, 429]],
      ['post', '/api/v1/run-multiple-ffmpeg-commands', [200, 400, 401, 403, 404, 409, 422, 429]],
      ['post', '/api/v1/ytdlp-download', [200, 401, 403, 404, 409, 422, 429, 501]],
      ['post', '/api/v1/run-ytdlp-command', [200, 401, 403, 404, 409, 422, 429, 501]],
      ['get', '/api/v1/commands/{commandId}', [200, 401, 404, 429]],
      ['get', '/api/v1/commands', [200, 400, 401, 429]],
      ['delete', '/api/v1/commands/{commandId}/files', [200, 401, 404, 429]],
      ['get', '/api/v1/commands/{commandId}/events', [200, 204, 401, 404, 429]],
      ['post', '/api/v1/commands/{commandId}/cancel', [200, 401, 404, 409, 429]],
      ['post', '/api/v1/files/upload', [200, 401, 422, 429]],
      ['post', '/api/v1/files/store-file', [200, 400, 401, 422, 429]],
      ['get', '/api/v1/files/{fileId}', [200, 401, 404, 429]],
      ['get', '/api/v1/files', [200, 400, 401, 429]],
      ['delete', '/api/v1/files/{fileId}', [200, 401, 404, 429]],
      ['post', '/api/v1/presets', [201, 400, 401, 422, 429]],
      ['get', '/api/v1/presets', [200, 401, 429]],
      ['put', '/api/v1/presets/{presetId}', [200, 400, 401, 404, 422, 429]],
      ['delete', '/api/v1/presets/{presetId}', [200, 401, 404, 429]],
      ['post', '/api/v1/presets/{presetId}/execute', [200, 401, 404, 422, 429]],
      ['put', '/api/v1/webhook-config', [200, 401, 422, 429]],
      ['delete', '/api/v1/webhook-config', [200, 401, 429]],
      ['put', '/api/v1/ytdlp-cookies', [200, 400, 401, 403, 429]],
      ['get', '/api/v1/ytdlp-cookies', [200, 401, 403, 404, 429]],
      ['delete', '/api/v1/ytdlp-cookies', [200, 401, 404, 429]],
    ]
    for (const [method, path, statuses] of spec) {
      const responses = doc.paths[path]?.[method]?.responses ?? {}
      for (const status of statuses) t.ok(responses[status], `${method.toUpperCase()} ${path} documents ${status}`)
      for (const status of statuses.filter((s) => s >= 400)) {
        const schema = responses[status]?.content?.['application/json']?.schema
        t.same(schema?.required?.sort(), ['error', 'message'], `${method.toUpperCase()} ${path} ${status} is an ErrorResponse`)
      }
    }
  })

  t.test('states the rules the server enforces: alias keys, metadata and list bounds', async (t) => {
    const doc = (await api.app.inject({ method: 'GET', url: '/openapi.json' })).json()
    const run = doc.paths['/api/v1/run-ffmpeg-command'].post.requestBody.content['application/json'].schema
    t.equal(run.additionalProperties, false, 'unknown fields are refused')
    t.ok(new RegExp(run.properties.input_files.propertyNames.pattern).test('in_video'), 'input keys are in_* aliases')
    t.notOk(new RegExp(run.properties.input_files.propertyNames.pattern).test('video'))
    t.ok(new RegExp(run.properties.output_files.propertyNames.pattern).test('out_small'))
    const metadataObject = (run.properties.metadata.anyOf as { type: string; maxProperties?: number }[]).find((s) => s.type === 'object')
    t.equal(metadataObject?.maxProperties, 10, 'metadata: at most 10 keys')
    const chained = doc.paths['/api/v1/run-chained-ffmpeg-commands'].post.requestBody.content['application/json'].schema
    t.equal(chained.properties.ffmpeg_commands.maxItems, 10)
    const list = doc.paths['/api/v1/commands'].get.parameters as { name: string; required?: boolean; schema: Record<string, number> }[]
    const limit = list.find((p) => p.name === 'limit')!
    const offset = list.find((p) => p.name === 'offset')!
    t.match(limit.schema, { minimum: 1, maximum: 100 })
    t.match(offset.schema, { minimum: 0, maximum: Number.MAX_SAFE_INTEGER })
    t.notOk(limit.required, 'limit has a default, so it is optional')
    t.notOk(offset.required, 'offset has a default, so it is optional')
  })

  t.test('documents cancel, the per-command limits and retention_days on every command endpoint and on preset execute, and expires_at on a stored file', async (t) => {
    const doc = (await api.app.inject({ method: 'GET', url: '/openapi.json' })).json()
    const cancel = doc.paths['/api/v1/commands/{commandId}/cancel'].post
    t.match(cancel.responses[200].content['application/json'].schema, { required: ['command_id', 'status'] })
    t.match(cancel.description, /CANCELLED/)
    const bodies = ['run-ffmpeg-command', 'run-chained-ffmpeg-commands', 'ytdlp-download', 'run-ytdlp-command', 'presets/{presetId}/execute']
      .map((path) => [path, doc.paths[`/api/v1/${path}`].post.requestBody.content['application/json'].schema] as const)
    const multiple = doc.paths['/api/v1/run-multiple-ffmpeg-commands'].post.requestBody.content['application/json'].schema
    for (const [path, schema] of [...bodies, ['run-multiple-ffmpeg-commands commands[]', multiple.properties.commands.items] as const]) {
      t.match(schema.properties.max_command_run_seconds, { type: 'integer', minimum: 1 }, `${path}: max_command_run_seconds`)
      t.match(schema.properties.vcpu_count, { type: 'number', minimum: 0.1 }, `${path}: vcpu_count`)
      t.notOk(schema.required?.includes('vcpu_count'), `${path}: the limits are optional`)
      t.match(schema.properties.retention_days, { type: 'integer', minimum: 1, maximum: 3650 }, `${path}: retention_days`)
      t.notOk(schema.required?.includes('retention_days'), `${path}: retention_days is optional`)
    }
    const stored = doc.paths['/api/v1/files/{fileId}'].get.responses[200].content['application/json'].schema
    t.match(stored.properties.expires_at, { anyOf: [{ type: 'string', format: 'date-time' }, { type: 'null' }] }, 'a stored file says when it expires')
  })

  t.test('an offset past the largest safe integer is refused, not echoed as a float', async (t) => {
    const { api_key } = await api.createAccount('business')
    for (const offset of ['1.6e32', '9007199254740992', '1.5', '-1']) {
      const res = await api.app.inject({ method: 'GET', url: `/api/v1/commands?offset=${offset}`, headers: { 'x-api-key': api_key } })
      t.equal(res.statusCode, 400, `offset=${offset}`)
      t.match(res.json(), { error: 'INVALID_REQUEST', message: /querystring\.offset/ })
    }
    const largest = await api.app.inject({ method: 'GET', url: `/api/v1/presets?offset=${Number.MAX_SAFE_INTEGER}`, headers: { 'x-api-key': api_key } })
    t.equal(largest.statusCode, 200)
    t.equal(largest.json().offset, Number.MAX_SAFE_INTEGER)
  })

  t.test('a known path with another method is 405 with Allow; an unknown path stays 404', async (t) => {
    const { api_key } = await api.createAccount('business')
    const headers = { 'x-api-key': api_key }
    const patch = await api.app.inject({ method: 'PATCH', url: '/api/v1/commands/0b0e4f6c-0000-4000-8000-000000000000', headers })
    t.equal(patch.statusCode, 405)
    t.equal(patch.headers.allow, 'GET, HEAD')
    t.match(patch.json(), { error: 'METHOD_NOT_ALLOWED', message: /PATCH/ })
    const onStoreFile = await api.app.inject({ method: 'GET', url: '/api/v1/files/store-file', headers })
    t.equal(onStoreFile.statusCode, 404, 'GET /files/store-file is the file route with id "store-file"')
    const optionsStoreFile = await api.app.inject({ method: 'OPTIONS', url: '/api/v1/files/store-file', headers })
    t.equal(optionsStoreFile.statusCode, 405)
    t.equal(optionsStoreFile.headers.allow, 'POST', 'the static route, not /files/:fileId')
    const withBody = await api.app.inject({ method: 'PUT', url: '/api/v1/files', headers: { ...headers, 'content-type': 'text/plain' }, payload: 'x' })
    t.equal(withBody.statusCode, 405, 'the method is judged before the body')
    t.equal(withBody.headers.allow, 'GET, HEAD')
    const unknown = await api.app.inject({ method: 'GET', url: '/api/v1/nothing-here', headers })
    t.equal(unknown.statusCode, 404)
    const anonymous = await api.app.inject({ method: 'PATCH', url: '/api/v1/files' })
    t.equal(anonymous.statusCode, 401, 'without a key the route table is not revealed')
  })

  t.test('QUERY, TRACE and other unserved methods are 405 with Allow on /api/v1 and /console/api alike, judged before any body', async (t) => {
    const { api_key } = await api.createAccount('business')
    const headers = { 'x-api-key': api_key }
    for (const method of ['QUERY', 'TRACE', 'PATCH']) {
      for (const url of ['/api/v1/files', '/console/api/keys', '/console/api/session']) {
        // QUERY without a Content-Type is Fastify's 400 when a route's body would be read.
        const res = await api.app.inject({ method: method as 'GET', url, headers })
        t.equal(res.statusCode, 405, `${method} ${url}`)
        t.ok(res.headers.allow && !String(res.headers.allow).split(', ').includes(method), `${method} ${url}: Allow lists the methods served, not ${method}`)
        t.match(res.json(), { error: 'METHOD_NOT_ALLOWED', message: new RegExp(`${method} is not allowed on ${url}`) })
      }
      const unknown = await api.app.inject({ method: method as 'GET', url: '/console/api/nothing-here', headers })
      t.equal(unknown.statusCode, 404, `${method} on an unknown console path`)
      t.match(unknown.json(), { error: 'NOT_FOUND' })
    }
    const allowed = await api.app.inject({ method: 'TRACE', url: '/console/api/session' })
    t.same(String(allowed.headers.allow).split(', '), ['DELETE', 'GET', 'HEAD', 'POST'], 'the session route\'s own methods')
  })
})
