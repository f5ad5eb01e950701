import { randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { createServer, type RequestListener } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { classifyAddress } from '../../contracts/url-guard.js'
import { guardedDownload, UrlGuardError, type GuardedFetchOptions } from '../../contracts/url-guard-fetch.js'
import { scratchDir, type Teardown } from '../harness/scratch.js'

const body = randomBytes(64 * 1024)

async function serve(t: Teardown, host: string, handler: RequestListener): Promise<string> {
  const server = createServer(handler)
  await new Promise<void>((resolve) => server.listen(0, host, resolve))
  t.teardown(() => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()) }))
  return `http://${host}:${(server.address() as AddressInfo).port}`
}

// The "public" server of these tests lives on 127.0.0.2: this classifier trusts that one
// address and applies the real rule to every other, so 127.0.0.1 stays forbidden.
const trustOne = (address: string) => (address === '127.0.0.2' ? { forbidden: false as const } : classifyAddress(address))
const strict: GuardedFetchOptions = { allowPrivateNetworks: false, maxBytes: 1 << 20, timeoutMs: 5000, classify: trustOne }

async function failure(t: Test, promise: Promise<unknown>): Promise<UrlGuardError> {
  try {
    await promise
  } catch (error) {
    t.ok(error instanceof UrlGuardError, `a UrlGuardError: ${String(error)}`)
    return error as UrlGuardError
  }
  t.fail('expected the fetch to fail')
  return new UrlGuardError('UNREACHABLE', 'did not fail')
}

t.test('refuses 127.0.0.1 unless private networks are allowed', async (t) => {
  const dir = await scratchDir(t)
  const base = await serve(t, '127.0.0.1', (_req, res) => res.end(body))
  const target = join(dir, 'a.bin')
  const error = await failure(t, guardedDownload(`${base}/a`, target, strict))
  t.equal(error.code, 'FORBIDDEN_ADDRESS')
  t.match(error.message, /127.0.0.1 is a loopback address/)
  t.notOk(existsSync(target), 'writes nothing')
  const fetched = await guardedDownload(`${base}/a`, target, { ...strict, allowPrivateNetworks: true })
  t.equal(fetched.bytes, body.length)
  t.ok((await readFile(target)).equals(body))
})

t.test('refuses a public-looking name that resolves to loopback, and localhost', async (t) => {
  const dir = await scratchDir(t)
  const base = await serve(t, '127.0.0.1', (_req, res) => res.end(body))
  const port = new URL(base).port
  const error = await failure(t, guardedDownload(`http://media.example.com:${port}/a`, join(dir, 'a'), { ...strict, resolve: async () => ['127.0.0.1'] }))
  t.equal(error.code, 'FORBIDDEN_ADDRESS')
  t.match(error.message, /media.example.com resolves to 127.0.0.1 is a loopback/)
  const mixed = await failure(t, guardedDownload(`http://media.example.com:${port}/a`, join(dir, 'a'), { ...strict, resolve: async () => ['127.0.0.2', '10.0.0.1'] }))
  t.match(mixed.message, /10.0.0.1 is a private/, 'one forbidden address among allowed ones refuses the name')
  const local = await failure(t, guardedDownload(`http://localhost:${port}/a`, join(dir, 'a'), strict))
  t.equal(local.code, 'FORBIDDEN_ADDRESS')
})

t.test('connects to the address the resolver returned and checked', async (t) => {
  const dir = await scratchDir(t)
  const base = await serve(t, '127.0.0.2', (req, res) => res.end(`host=${req.headers.host}`))
  const port = new URL(base).port
  const fetched = await guardedDownload(`http://media.example.com:${port}/a`, join(dir, 'a'), { ...strict, resolve: async () => ['127.0.0.2'] })
  t.equal(await readFile(join(dir, 'a'), 'utf8'), `host=media.example.com:${port}`)
  t.equal(fetched.finalUrl, `http://media.example.com:${port}/a`)
})

t.test('refuses a redirect from an allowed server to loopback or the metadata service', async (t) => {
  const dir = await scratchDir(t)
  const inside = await serve(t, '127.0.0.1', (_req, res) => res.end('secret'))
  const base = await serve(t, '127.0.0.2', (req, res) => {
    const to = { '/loop': `${inside}/x`, '/meta': 'http://169.254.169.254/latest/meta-data/', '/name': 'http://localhost/x', '/file': 'file:///etc/passwd' }[req.url ?? '']
    res.writeHead(302, { location: to ?? '/end' }).end()
  })
  for (const [path, code, reason] of [['/loop', 'FORBIDDEN_ADDRESS', /127.0.0.1/], ['/meta', 'FORBIDDEN_ADDRESS', /169.254.169.254/], ['/name', 'FORBIDDEN_ADDRESS', /localhost resolves/], ['/file', 'INVALID_URL', /file:/]] as const) {
    const error = await failure(t, guardedDownload(`${base}${path}`, join(dir, 'r'), strict))
    t.equal(error.code, code, path)
    t.match(error.message, reason, path)
    t.notOk(existsSync(join(dir, 'r')))
  }
})

t.test('follows allowed redirects up to the limit', async (t) => {
  const dir = await scratchDir(t)
  const base = await serve(t, '127.0.0.2', (req, res) => {
    const n = Number((req.url ?? '/0').slice(1))
    if (n < 10) res.writeHead(301, { location: `/${n + 1}` }).end()
    else res.end(body)
  })
  const ok = await guardedDownload(`${base}/5`, join(dir, 'ok'), strict)
  t.equal(ok.finalUrl, `${base}/10`)
  t.equal(ok.bytes, body.length)
  const error = await failure(t, guardedDownload(`${base}/0`, join(dir, 'no'), strict))
  t.equal(error.code, 'TOO_MANY_REDIRECTS')
})

t.test('stops at the size limit, with or without a Content-Length', async (t) => {
  const dir = await scratchDir(t)
  const base = await serve(t, '127.0.0.2', (req, res) => {
    if (req.url === '/chunked') {
      res.write(body)
      res.end(body)
    } else {
      res.writeHead(200, { 'content-length': body.length }).end(body)
    }
  })
  const small = { ...strict, maxBytes: 1000 }
  for (const path of ['/declared', '/chunked']) {
    const error = await failure(t, guardedDownload(`${base}${path}`, join(dir, 'big'), small))
    t.equal(error.code, 'TOO_LARGE', path)
    t.notOk(existsSync(join(dir, 'big')), `${path}: the partial file is removed`)
  }
})

t.test('gives up at the time limit', async (t) => {
  const dir = await scratchDir(t)
  const base = await serve(t, '127.0.0.2', (_req, res) => {
    res.writeHead(200)
    res.write('slow')
  })
  const started = Date.now()
  const error = await failure(t, guardedDownload(`${base}/x`, join(dir, 'slow'), { ...strict, timeoutMs: 300 }))
  t.equal(error.code, 'TIMEOUT')
  t.ok(Date.now() - started < 3000, 'returns soon after the limit')
  t.notOk(existsSync(join(dir, 'slow')))
})

t.test('reports HTTP errors and unreachable servers', async (t) => {
  const dir = await scratchDir(t)
  const base = await serve(t, '127.0.0.2', (_req, res) => res.writeHead(404).end())
  const notFound = await failure(t, guardedDownload(`${base}/x`, join(dir, 'x'), strict))
  t.equal(notFound.code, 'HTTP_STATUS')
  t.equal(notFound.httpStatus, 404)
  const closed = await serve(t, '127.0.0.2', () => undefined)
  const port = new URL(closed).port
  const error = await failure(t, guardedDownload(`http://media.example.com:${Number(port) === 65535 ? 1 : 9}/x`, join(dir, 'x'), { ...strict, resolve: async () => ['127.0.0.2'] }))
  t.equal(error.code, 'UNREACHABLE')
})
