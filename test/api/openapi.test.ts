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

  t.test('every documented /api/v1 path is a route the app serves', async (t) => {
    const doc = (await api.app.inject({ method: 'GET', url: '/openapi.json' })).json()
    for (const [path, methods] of Object.entries(doc.paths as Record<string, Record<string, unknown>>)) {
      t.ok(path.startsWith('/api/v1/'), `${path} is under /api/v1`)
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
})
