import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { startApi } from '../harness/api.js'
import { scratchDir } from '../harness/scratch.js'

t.test('the console bundle at /console/', async (t) => {
  const dir = await scratchDir(t, 'ffkube-console-')
  await writeFile(join(dir, 'index.html'), '<!doctype html><title>console</title>')
  await writeFile(join(dir, 'console.js'), 'export {}')
  await writeFile(join(dir, 'notes.txt'), 'not served')
  const api = await startApi(t, { consoleDir: dir })

  t.test('serves index.html with a strict Content-Security-Policy, no framing and no Referer', async (t) => {
    const page = await api.app.inject({ method: 'GET', url: '/console/' })
    t.equal(page.statusCode, 200)
    t.match(page.headers['content-type'], /^text\/html/)
    t.match(page.headers['content-security-policy'], /default-src 'self'; script-src 'self';/)
    t.notMatch(page.headers['content-security-policy'], /unsafe-inline|unsafe-eval/)
    t.match(page.headers['content-security-policy'], /frame-ancestors 'none'/)
    t.equal(page.headers['referrer-policy'], 'no-referrer')
    t.equal(page.headers['x-content-type-options'], 'nosniff')
    const again = await api.app.inject({ method: 'GET', url: '/console/', headers: { 'if-none-match': String(page.headers.etag) } })
    t.equal(again.statusCode, 304, 'revalidates by ETag')
    const redirect = await api.app.inject({ method: 'GET', url: '/console' })
    t.equal(redirect.statusCode, 302)
    t.equal(redirect.headers.location, '/console/')
  })

  t.test('serves the bundle beside it, and nothing else of the folder or above it', async (t) => {
    const script = await api.app.inject({ method: 'GET', url: '/console/console.js' })
    t.equal(script.statusCode, 200)
    t.match(script.headers['content-type'], /^text\/javascript/)
    for (const url of ['/console/notes.txt', '/console/..%2Fpackage.json', '/console/%2e%2e%2fpackage.json', '/console/nope.js']) {
      const refused = await api.app.inject({ method: 'GET', url })
      t.equal(refused.statusCode, 404, url)
      t.equal(refused.json().error, 'NOT_FOUND')
    }
  })

  t.test('a server whose console was not built says how to build it', async (t) => {
    const empty = await scratchDir(t, 'ffkube-console-empty-')
    const bare = await startApi(t, { consoleDir: empty })
    const page = await bare.app.inject({ method: 'GET', url: '/console/' })
    t.equal(page.statusCode, 404)
    t.match(page.json().message, /scripts\/build-console\.sh/)
  })
})
