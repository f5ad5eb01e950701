/**
 * Every route of the served OpenAPI document, fed what a hostile client
 * sends: odd path segments, bad query values, broken JSON, strange field
 * values and keys, broken multipart bodies. User input must never reach the
 * 5xx path: each answer is below 500 and, when refused, the spec's
 * `{error, message}`.
 */
import t, { type Test } from 'tap'
import type { FastifyInstance, InjectOptions } from 'fastify'
import { ConsoleSession } from '../console/console-client.js'
import { startApi } from '../harness/api.js'

type Json = null | boolean | number | string | Json[] | { [key: string]: Json }

interface Route {
  method: string
  /** Fastify's form: `/api/v1/files/:fileId`. */
  path: string
  params: string[]
  hasJsonBody: boolean
  multipart: boolean
}

/** Path segments as a client could put them on the wire. */
const HOSTILE_SEGMENTS = [
  '%ff',
  '%E0%A4%A',
  '%',
  '%00',
  '%C0%AF',
  '%ED%A0%80',
  '..%2F..%2Fetc%2Fpasswd',
  encodeURIComponent('😀'),
  encodeURIComponent('{"$gt":""}'),
  '__proto__',
  'constructor',
  'a'.repeat(5000),
]

const HOSTILE_QUERIES = [
  'limit=%ff',
  'limit=1e309',
  'limit=-1',
  'limit=99999999999999999999999',
  'limit=0x10',
  'limit=Infinity',
  'offset=1.6e32',
  'offset=NaN',
  'offset=-0',
  'limit=1&limit=2',
  'status=%00',
  'status[]=SUCCESS',
  '__proto__=1',
  '%=%',
  'status=%E0%A4%A',
]

/** Bodies sent as `application/json` text. */
const HOSTILE_JSON_TEXTS = [
  '',
  '{',
  '{"a":',
  'null',
  '[]',
  '"x"',
  '1e400',
  '{"__proto__":{"polluted":1}}',
  '{"constructor":{"prototype":{"polluted":1}}}',
  `${'['.repeat(5000)}${']'.repeat(5000)}`,
  '{"a":"\\ud800"}',
  '\u0000',
]

/** Field values: URLs decoders choke on, private and malformed hosts, control and odd unicode characters. */
const HOSTILE_STRINGS = [
  'https://a.example/%ff.mp4',
  'https://a.example/%E0%A4%A',
  'https://a.example/%',
  '%',
  'https://localhost./x.mp4',
  'https://a.localhost./x.mp4',
  'http://10.0.0.1/x.mp4',
  'https://[::1',
  'https://a.example:99999/x.mp4',
  'a\u0000b',
  '\ud800',
  '\u202e\u0007\u001b[2J',
  'ffmpeg -i {{in_v}} -metadata title=a\u0000b {{out_x}}',
  'ffmpeg -i {{in_v}} -threads 100000 {{out_x}}',
  '😀'.repeat(1000),
  'x'.repeat(100_000),
  '__proto__',
  '{"$gt":""}',
]

const HOSTILE_NUMBERS = [1e308, -1, 2 ** 64, 0.5]

const HOSTILE_KEYS = ['in_%ff', 'out_\u0000', '__proto__', 'constructor', '$where', 'a.b', '']

/** A body each JSON route accepts (or refuses only for the resource it names), keyed `METHOD path`. */
function baseBodies(): Record<string, Json> {
  const ffmpeg = {
    input_files: { in_v: 'https://media.example.com/a.mp4' },
    output_files: { out_x: 'x.mp4' },
    ffmpeg_command: 'ffmpeg -i {{in_v}} -c copy {{out_x}}',
    metadata: { k: 'v' },
    webhook_url: 'https://hooks.example.com/x',
  }
  return {
    'POST /api/v1/run-ffmpeg-command': ffmpeg,
    'POST /api/v1/run-chained-ffmpeg-commands': {
      input_files: ffmpeg.input_files,
      output_files: ffmpeg.output_files,
      ffmpeg_commands: ['ffmpeg -i {{in_v}} -c copy mid.mp4', 'ffmpeg -i mid.mp4 -c copy {{out_x}}'],
      metadata: ffmpeg.metadata,
    },
    'POST /api/v1/run-multiple-ffmpeg-commands': { commands: [ffmpeg] },
    'POST /api/v1/ytdlp-download': { input_urls: { in_v: 'https://media.example.com/watch?v=1' }, format_selector: '720p', metadata: ffmpeg.metadata },
    'POST /api/v1/run-ytdlp-command': {
      input_urls: { in_v: 'https://media.example.com/watch?v=1' },
      ffmpeg_command: '-i {{in_v}} -c copy {{out_x}}',
      output_files: ffmpeg.output_files,
    },
    'POST /api/v1/files/store-file': { file_url: 'https://media.example.com/a.mp4' },
    'POST /api/v1/presets': {
      name: 'p',
      description: 'd',
      ffmpeg_command: 'ffmpeg -i {{in_v}} -c copy {{out_x}}',
      input_file_keys: ['in_v'],
      output_file_definitions: { out_x: 'x.mp4' },
      metadata: ffmpeg.metadata,
    },
    'PUT /api/v1/presets/:presetId': { name: 'q', input_file_keys: ['in_v'] },
    'POST /api/v1/presets/:presetId/execute': { input_files: { in_v: 'https://media.example.com/a.mp4' }, webhook_url: 'https://hooks.example.com/x', metadata: ffmpeg.metadata },
    'POST /api/v1/storage-destinations': {
      name: 'd',
      endpoint_url: 'https://s3.example.com',
      region: 'auto',
      bucket: 'bucket',
      prefix: 'a/b',
      public_base_url: 'https://cdn.example.com/x',
      path_style: true,
      credentials: { access_key_id: 'AKIA1234', secret_access_key: 'secret' },
    },
    'PATCH /api/v1/storage-destinations/:storageDestinationId': { name: 'e', prefix: 'c', public_base_url: 'https://cdn.example.com/y' },
    'PUT /api/v1/webhook-config': { url: 'https://hooks.example.com/x', secret: 's' },
    'PUT /api/v1/ytdlp-cookies': { cookies: '# Netscape HTTP Cookie File\n.example.com\tTRUE\t/\tTRUE\t0\tsession\tvalue\n' },
    // The console's sign-in bodies: well-formed, unknown (a 401 once the shape passes).
    'POST /console/api/session': { api_key: `ffsk_${'0'.repeat(64)}` },
    'POST /console/api/session/link': { token: 'A'.repeat(43) },
  }
}

/** Every body that differs from `base` in one leaf value or one added key. */
function mutations(base: Json): Array<{ what: string; body: string }> {
  const out: Array<{ what: string; body: string }> = []
  const visit = (value: Json, path: Array<string | number>) => {
    if (typeof value === 'string') for (const s of HOSTILE_STRINGS) out.push({ what: `${path.join('.')}=${JSON.stringify(s).slice(0, 40)}`, body: JSON.stringify(replaceAt(base, path, s)) })
    if (typeof value === 'number' || typeof value === 'boolean') {
      for (const n of HOSTILE_NUMBERS) out.push({ what: `${path.join('.')}=${n}`, body: JSON.stringify(replaceAt(base, path, n)) })
    }
    if (Array.isArray(value)) {
      value.forEach((item, i) => visit(item, [...path, i]))
      out.push({ what: `${path.join('.')} with 10000 items`, body: JSON.stringify(replaceAt(base, path, Array(10_000).fill(value[0] ?? 'x'))) })
    } else if (value !== null && typeof value === 'object') {
      for (const [key, item] of Object.entries(value)) visit(item, [...path, key])
      for (const key of HOSTILE_KEYS) {
        // Spliced into the text: an object literal would turn `__proto__` into a prototype, not a key.
        const marked = JSON.stringify(replaceAt(base, path, { ...value, '\u0001key': 'https://media.example.com/a.mp4' }))
        out.push({ what: `${path.join('.') || 'body'} key ${JSON.stringify(key)}`, body: marked.replace('"\\u0001key"', JSON.stringify(key)) })
      }
    }
  }
  visit(base, [])
  return out
}

function replaceAt(value: Json, path: Array<string | number>, replacement: Json): Json {
  if (path.length === 0) return replacement
  const [head, ...rest] = path
  if (Array.isArray(value)) return value.map((item, i) => (i === head ? replaceAt(item, rest, replacement) : item))
  const object = value as { [key: string]: Json }
  return { ...object, [head as string]: replaceAt(object[head as string] as Json, rest, replacement) }
}

/** The routes the served document lists, in Fastify's path form. */
async function documentedRoutes(app: FastifyInstance): Promise<Route[]> {
  const doc = (await app.inject({ method: 'GET', url: '/openapi.json' })).json() as {
    paths: Record<string, Record<string, { requestBody?: { content?: Record<string, unknown> } }>>
  }
  const routes: Route[] = []
  for (const [path, operations] of Object.entries(doc.paths)) {
    for (const [method, operation] of Object.entries(operations)) {
      if (!['get', 'post', 'put', 'patch', 'delete'].includes(method)) continue
      const content = Object.keys(operation.requestBody?.content ?? {})
      routes.push({
        method: method.toUpperCase(),
        path: path.replace(/\{(\w+)\}/g, ':$1'),
        params: [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1] as string),
        hasJsonBody: content.includes('application/json'),
        // The upload route takes multipart whether or not the document states its body yet.
        multipart: content.includes('multipart/form-data') || path.endsWith('/files/upload'),
      })
    }
  }
  return routes
}

t.test('no hostile input reaches the 5xx path, on any route', async (t) => {
  const api = await startApi(t)
  const { api_key } = await api.createAccount('business')
  const headers = { 'x-api-key': api_key }
  const created = await api.app.inject({ method: 'POST', url: '/api/v1/presets', headers, payload: baseBodies()['POST /api/v1/presets'] as object })
  t.equal(created.statusCode, 201, created.body)
  const presetId = created.json().preset_id as string
  const bodies = baseBodies()
  const routes = await documentedRoutes(api.app)
  t.ok(routes.length >= 25, `the document lists the API's routes (${routes.length})`)

  const realParams: Record<string, string> = { presetId, fileId: 'file_00000000000000000000000000000000', commandId: 'cmd_0', storageDestinationId: 'sd_00000000000000000000000000000000', keyId: 'key_00000000000000000000000000000000' }
  const urlOf = (route: Route, segment?: string) => route.path.replace(/:(\w+)/g, (_, name: string) => segment ?? realParams[name] ?? 'x')

  /** Sends one request; a 5xx or a refusal without `{error, message}` fails the test. */
  const expectHandledAs = async (t: Test, what: string, options: InjectOptions, as: Record<string, string>) => {
    const res = await api.app.inject({ ...options, headers: { ...as, ...(options.headers ?? {}) } })
    if (res.statusCode >= 500) {
      t.fail(`${what}: ${res.statusCode} ${res.body.slice(0, 300)}`)
      return
    }
    if (res.statusCode < 400) return
    let body: unknown
    try {
      body = res.json()
    } catch {
      body = res.body
    }
    const shaped = typeof body === 'object' && body !== null && typeof (body as { error?: unknown }).error === 'string' && typeof (body as { message?: unknown }).message === 'string'
    if (!shaped) t.fail(`${what}: ${res.statusCode} without {error, message}: ${res.body.slice(0, 300)}`)
  }

  for (const route of routes) {
    t.test(`${route.method} ${route.path}`, async (t) => {
      const key = `${route.method} ${route.path}`
      const base = bodies[key]
      // The console's routes take a session, not a key: a fresh one per route (one of them signs out),
      // so hostile input reaches their validation and handlers rather than stopping at 401.
      const as = route.path.startsWith('/console/api/') ? await consoleHeaders(api.app, api_key) : headers
      const expectHandled = (t: Test, what: string, options: InjectOptions) => expectHandledAs(t, what, options, as)
      if (route.hasJsonBody && base === undefined) t.fail(`${key} takes a JSON body: add a base body to this test`)
      const payload = route.hasJsonBody && base !== undefined ? { payload: JSON.stringify(base), headers: { 'content-type': 'application/json' } } : {}
      for (const segment of route.params.length > 0 ? HOSTILE_SEGMENTS : []) {
        await expectHandled(t, `path segment ${segment.slice(0, 40)}`, { method: route.method as 'GET', url: urlOf(route, segment), ...payload })
      }
      for (const query of HOSTILE_QUERIES) {
        await expectHandled(t, `query ${query}`, { method: route.method as 'GET', url: `${urlOf(route)}?${query}`, ...payload })
      }
      if (route.hasJsonBody) {
        for (const text of HOSTILE_JSON_TEXTS) {
          await expectHandled(t, `JSON body ${JSON.stringify(text.slice(0, 40))}`, { method: route.method as 'POST', url: urlOf(route), payload: text, headers: { 'content-type': 'application/json' } })
        }
        for (const contentType of ['application/json; charset=utf-16', 'application/json; charset=bogus', 'text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data']) {
          await expectHandled(t, `Content-Type ${contentType}`, { method: route.method as 'POST', url: urlOf(route), payload: JSON.stringify(base ?? {}), headers: { 'content-type': contentType } })
        }
        for (const { what, body } of mutations(base ?? {})) {
          await expectHandled(t, what, { method: route.method as 'POST', url: urlOf(route), payload: body, headers: { 'content-type': 'application/json' } })
        }
      }
      if (route.multipart) {
        for (const [what, contentType, body] of MULTIPART_CASES) {
          await expectHandled(t, what, { method: route.method as 'POST', url: urlOf(route), payload: body, headers: { 'content-type': contentType } })
        }
      }
    })
  }
})

/** A console session's headers as the page sends them: the cookie, same-origin, and the CSRF token. */
async function consoleHeaders(app: FastifyInstance, apiKey: string): Promise<Record<string, string>> {
  const session = await ConsoleSession.signIn(app, apiKey)
  return { cookie: session.cookie, 'sec-fetch-site': 'same-origin', 'x-csrf-token': session.csrfToken }
}

const BOUNDARY = 'ffkubeboundary'
const part = (headers: string, content: string) => `--${BOUNDARY}\r\n${headers}\r\n\r\n${content}\r\n`
const fileHeaders = (filename: string) => `Content-Disposition: form-data; name="file"; filename="${filename}"\r\nContent-Type: video/mp4`

/** [what, Content-Type, body] */
const MULTIPART_CASES: Array<[string, string, string]> = [
  ['a body without its closing boundary', `multipart/form-data; boundary=${BOUNDARY}`, `--${BOUNDARY}\r\n${fileHeaders('a.mp4')}\r\n\r\nbytes`],
  ['a body cut inside the part headers', `multipart/form-data; boundary=${BOUNDARY}`, `--${BOUNDARY}\r\nContent-Disposition: form-da`],
  ['multipart/form-data without a boundary', 'multipart/form-data', part(fileHeaders('a.mp4'), 'bytes') + `--${BOUNDARY}--\r\n`],
  ['an empty boundary', 'multipart/form-data; boundary=', `--\r\n--\r\n`],
  ['a boundary the body never uses', 'multipart/form-data; boundary=other', part(fileHeaders('a.mp4'), 'bytes') + `--${BOUNDARY}--\r\n`],
  ['an empty body', `multipart/form-data; boundary=${BOUNDARY}`, ''],
  ['only the closing boundary', `multipart/form-data; boundary=${BOUNDARY}`, `--${BOUNDARY}--\r\n`],
  ['a part without Content-Disposition', `multipart/form-data; boundary=${BOUNDARY}`, part('Content-Type: video/mp4', 'bytes') + `--${BOUNDARY}--\r\n`],
  ['two file parts', `multipart/form-data; boundary=${BOUNDARY}`, part(fileHeaders('a.mp4'), 'a') + part(fileHeaders('b.mp4'), 'b') + `--${BOUNDARY}--\r\n`],
  ['a filename of %ff and a NUL', `multipart/form-data; boundary=${BOUNDARY}`, part(fileHeaders('%ff\u0000.mp4'), 'a') + `--${BOUNDARY}--\r\n`],
  ['a filename walking out of the directory', `multipart/form-data; boundary=${BOUNDARY}`, part(fileHeaders('../../etc/passwd'), 'a') + `--${BOUNDARY}--\r\n`],
  ['an RFC 5987 filename* with a broken escape', `multipart/form-data; boundary=${BOUNDARY}`, part(`Content-Disposition: form-data; name="file"; filename*=UTF-8''%E0%A4%A`, 'a') + `--${BOUNDARY}--\r\n`],
  ['a field part before the file', `multipart/form-data; boundary=${BOUNDARY}`, part('Content-Disposition: form-data; name="note"', 'x') + part(fileHeaders('a.mp4'), 'a') + `--${BOUNDARY}--\r\n`],
  ['thirty parts', `multipart/form-data; boundary=${BOUNDARY}`, Array.from({ length: 30 }, (_, i) => part(`Content-Disposition: form-data; name="f${i}"`, 'x')).join('') + `--${BOUNDARY}--\r\n`],
]
