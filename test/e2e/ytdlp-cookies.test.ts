/**
 * Per-account yt-dlp cookies in local mode, through HTTP against the whole
 * service: a site built here serves a video only to the cookie an account
 * uploaded. That account's download succeeds; another account's, without
 * cookies, fails SOURCE_LOGIN_REQUIRED and never carries the first account's
 * cookie. The cookie file is gone before the user's ffmpeg starts, and the
 * cookie value appears in no answer, no log and no file the service keeps.
 */
import { randomBytes } from 'node:crypto'
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import t from 'tap'
import { cliEnvironment, runCli } from '../cli/cli-process.js'
import { eventually } from '../harness/eventually.js'
import { makeClip } from '../harness/media.js'
import { processesMentioning } from '../harness/processes.js'
import { scratchDir } from '../harness/scratch.js'
import { Client, createAccount, serviceEnvironment, startService } from './service.js'

/** Every regular file under `dir` whose bytes contain `needle`. */
async function filesContaining(dir: string, needle: string): Promise<string[]> {
  const found: string[] = []
  const entries = await readdir(dir, { recursive: true, withFileTypes: true }).catch(() => [])
  for (const entry of entries) {
    if (!entry.isFile()) continue
    const path = join(entry.parentPath, entry.name)
    const bytes = await readFile(path).catch(() => null)
    if (bytes?.includes(needle)) found.push(path)
  }
  return found
}

t.test('yt-dlp cookies: stored per account, used only for its downloads, never shown, gone before its ffmpeg', async (t) => {
  const dir = await scratchDir(t)
  const environment = await serviceEnvironment(t, { LOG_LEVEL: 'info' })
  const secret = randomBytes(24).toString('hex')
  // What a service killed during a download would leave: the next start removes it before its first run.
  const leftover = join(environment.dataDir, 'runner', 'ytdlp-cookies', 'cmd-of-a-killed-start-1')
  await mkdir(leftover, { recursive: true })
  await writeFile(join(leftover, 'cookies.txt'), `127.0.0.1\tFALSE\t/\tFALSE\t0\tsession\t${secret}\n`)
  const [service, clip] = await Promise.all([startService(t, environment), makeClip(join(dir, 'clip.mp4'), { seconds: 1, width: 320, height: 240 })])
  const clipBytes = await readFile(clip)
  const [a, b, free] = await Promise.all([createAccount(environment, 'growth'), createAccount(environment, 'growth'), createAccount(environment, 'free')])
  const alice = new Client({ baseUrl: service.baseUrl, apiKey: a.api_key })
  const bob = new Client({ baseUrl: service.baseUrl, apiKey: b.api_key })
  const freeClient = new Client({ baseUrl: service.baseUrl, apiKey: free.api_key })

  // A members-only site: the video for the right session cookie, 401 for anything else.
  const cookieHeaders: string[] = []
  const site = createServer((req, res) => {
    const cookie = req.headers.cookie ?? ''
    cookieHeaders.push(cookie)
    if (req.url !== '/members/clip.mp4') return res.writeHead(404).end()
    if (!cookie.split(/;\s*/).includes(`session=${secret}`)) return res.writeHead(401, { 'www-authenticate': 'Cookie realm="members"' }).end()
    res.writeHead(200, { 'content-type': 'video/mp4', 'content-length': clipBytes.length }).end(clipBytes)
  })
  await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => site.close(() => resolve())))
  const videoUrl = `http://127.0.0.1:${(site.address() as AddressInfo).port}/members/clip.mp4`
  const cookiesTxt = [
    '# Netscape HTTP Cookie File',
    '# exported for the test',
    '',
    `127.0.0.1\tFALSE\t/\tFALSE\t0\tsession\t${secret}`,
    `#HttpOnly_.Example.com\tTRUE\t/\tTRUE\t4102444800\tother\t${secret}-2`,
  ].join('\r\n')
  const answers: string[] = []
  const remember = <T extends { body: unknown }>(answer: T): T => {
    answers.push(JSON.stringify(answer.body))
    return answer
  }

  t.test('a cookie file a previous start left behind is gone once the service listens', async (t) => {
    t.same(await filesContaining(environment.dataDir, secret), [])
  })

  t.test('a plan without video downloads cannot store cookies', async (t) => {
    const refused = remember(await freeClient.request('PUT', '/ytdlp-cookies', { cookies: cookiesTxt }))
    t.equal(refused.status, 403)
    t.match(refused.body, { error: 'FORBIDDEN', message: /free plan/ })
  })

  t.test('refuses anything but a Netscape cookies.txt, naming the line and field, never quoting it', async (t) => {
    const cases: Array<[string, RegExp]> = [
      [`session=${secret}`, /body\.cookies line 1 has 1 tab-separated field; a cookie line has 7/],
      [JSON.stringify([{ name: 'session', value: secret, domain: '127.0.0.1' }]), /body\.cookies looks like JSON/],
      [`# Netscape HTTP Cookie File\n127.0.0.1\tFALSE\t/\tFALSE\t0\tsession`, /body\.cookies line 2 has 6 tab-separated fields/],
      [`127.0.0.1\tMAYBE\t/\tFALSE\t0\tsession\t${secret}`, /line 1: include-subdomains \(field 2\) must be TRUE or FALSE/],
      [`127.0.0.1\tFALSE\t/\tFALSE\tsoon\tsession\t${secret}`, /line 1: expires \(field 5\)/],
      [`127.0.0.1\tFALSE\t/\tFALSE\t0\tsession\t${secret}\u0000`, /line 1: the value \(field 7\) holds a control character/],
      ['# only a comment\n\n', /holds no cookie line/],
      ['x'.repeat(128 * 1024 + 1), /body\.cookies/],
    ]
    for (const [cookies, message] of cases) {
      const refused = remember(await alice.request('PUT', '/ytdlp-cookies', { cookies }))
      t.equal(refused.status, 400, message.source)
      t.match(refused.body, { error: 'INVALID_REQUEST', message }, message.source)
    }
    t.match(remember(await alice.request('PUT', '/ytdlp-cookies', {})), { status: 400, body: { error: 'INVALID_REQUEST', message: /body\.cookies is required/ } })
    t.equal(remember(await alice.request('GET', '/ytdlp-cookies')).status, 404, 'nothing was stored')
  })

  t.test('stores a cookies.txt and shows only its count, domains and dates', async (t) => {
    const stored = remember(await alice.request('PUT', '/ytdlp-cookies', { cookies: cookiesTxt }))
    t.equal(stored.status, 200, JSON.stringify(stored.body))
    t.same(Object.keys(stored.body).sort(), ['cookie_count', 'created_at', 'domains', 'updated_at'])
    t.match(stored.body, { cookie_count: 2, domains: ['127.0.0.1', 'example.com'] })
    const shown = remember(await alice.request('GET', '/ytdlp-cookies'))
    t.same(shown, stored, 'GET shows what PUT answered')
    t.equal(remember(await bob.request('GET', '/ytdlp-cookies')).status, 404, "another account does not see them")
  })

  t.test("the account's download carries its cookie; another account's fails SOURCE_LOGIN_REQUIRED without it", async (t) => {
    const { command_id: mine } = await alice.post('/ytdlp-download', { input_urls: { in_v: videoUrl } })
    const done = remember({ body: await alice.waitForCommand(mine) })
    t.match(done.body, { status: 'SUCCESS', output_files: { out_v: { status: 'STORED', file_type: 'video' } } }, JSON.stringify(done.body))
    t.ok(cookieHeaders.some((header) => header.includes(`session=${secret}`)), 'the site saw the cookie')
    const output = Buffer.from(await (await fetch(done.body.output_files.out_v.storage_url)).arrayBuffer())
    t.ok(output.equals(clipBytes), 'the output is the video, nothing else')

    const seenBefore = cookieHeaders.length
    const { command_id: theirs } = await bob.post('/ytdlp-download', { input_urls: { in_v: videoUrl } })
    const failed = remember({ body: await bob.waitForCommand(theirs) })
    t.match(failed.body, { status: 'FAILED', error_status: 'SOURCE_LOGIN_REQUIRED', failed_files: { in_v: { url: videoUrl, error_status: 'SOURCE_LOGIN_REQUIRED' } } })
    const bobs = cookieHeaders.slice(seenBefore)
    t.ok(bobs.length > 0, 'the site was asked')
    t.notOk(bobs.some((header) => header.includes(secret)), "no request of the other account carried the first one's cookie")
    for (const id of [mine, theirs]) {
      const logs = await (id === mine ? alice : bob).request('GET', `/commands/${id}/logs`)
      t.equal(logs.status, 200)
      t.notOk(JSON.stringify(logs.body).includes(secret), `the log of ${id} holds no cookie`)
    }
  })

  t.test("the cookie file is gone from every file the service keeps while the account's own ffmpeg runs", async (t) => {
    const marker = 'scale=34:34'
    const { command_id } = await alice.post('/run-ytdlp-command', {
      input_urls: { in_v: videoUrl },
      output_files: { out_x: 'x.mp4' },
      // Loops for ever: the test looks while it runs, then cancels it.
      ffmpeg_command: `-stream_loop -1 -i {{in_v}} -vf ${marker} -c:v libx264 -preset ultrafast {{out_x}}`,
    })
    await eventually('the post-processing ffmpeg', async () => (await processesMentioning(marker)).length > 0, 60_000)
    t.ok(cookieHeaders.filter((header) => header.includes(`session=${secret}`)).length >= 2, 'this download carried the cookie too')
    t.same(await filesContaining(environment.dataDir, secret), [], 'no file under the data dir holds the cookie while ffmpeg runs')
    t.equal((await alice.request('POST', `/commands/${command_id}/cancel`)).status, 200)
    const ended = await alice.waitForCommand(command_id)
    t.match(ended, { status: 'FAILED', error_status: 'CANCELLED' })

    // And naming where the file was is refused before anything runs (the argument policy: work-dir names only).
    const cookiesPath = join(environment.dataDir, 'runner', 'ytdlp-cookies', `${command_id}-1`, 'cookies.txt')
    const named = remember(await alice.request('POST', '/run-ytdlp-command', { input_urls: { in_v: videoUrl }, output_files: { out_x: 'x.txt' }, ffmpeg_command: `-i {{in_v}} -f data -i ${cookiesPath} -map 1 -c copy -f data {{out_x}}` }))
    t.equal(named.status, 422, JSON.stringify(named.body))
    t.match(named.body, { error: 'VALIDATION_ERROR', message: /ffmpeg_command/ })
  })

  t.test('a deleted cookies.txt is no longer used', async (t) => {
    t.same(remember(await alice.request('DELETE', '/ytdlp-cookies')), { status: 200, body: { deleted: true } })
    t.equal(remember(await alice.request('DELETE', '/ytdlp-cookies')).status, 404, 'a second DELETE finds none')
    t.equal(remember(await alice.request('GET', '/ytdlp-cookies')).status, 404)
    const { command_id } = await alice.post('/ytdlp-download', { input_urls: { in_v: videoUrl } })
    t.match(await alice.waitForCommand(command_id), { status: 'FAILED', error_status: 'SOURCE_LOGIN_REQUIRED' })
  })

  t.test('ffkube cookies set, get and delete, printing no cookie', async (t) => {
    const user = await cliEnvironment(join(dir, 'cli'), { FFKUBE_URL: service.baseUrl, FFKUBE_API_KEY: b.api_key })
    const set = await runCli(user, ['cookies', 'set', '-'], { stdin: cookiesTxt })
    t.equal(set.code, 0, set.stderr)
    t.match(set.stdout, /^cookies\s+2$/m)
    t.match(set.stdout, /^domains\s+127\.0\.0\.1, example\.com$/m)
    const json = await runCli(user, ['cookies', 'get', '--json'])
    t.match(JSON.parse(json.stdout), { cookie_count: 2, domains: ['127.0.0.1', 'example.com'] })
    const bad = await runCli(user, ['cookies', 'set', '-'], { stdin: `session=${secret}\n` })
    t.equal(bad.code, 3)
    t.match(bad.stderr, /400 INVALID_REQUEST: body\.cookies line 1/)
    const removed = await runCli(user, ['cookies', 'delete'])
    t.equal(removed.code, 0, removed.stderr)
    const gone = await runCli(user, ['cookies', 'get'])
    t.equal(gone.code, 3)
    t.match(gone.stderr, /404 NOT_FOUND/)
    for (const run of [set, json, bad, removed, gone]) answers.push(run.stdout, run.stderr)
  })

  t.test('the cookie value appears in no answer, no service log and no file of the data dir', async (t) => {
    t.ok(answers.length > 10, `${answers.length} answers looked at`)
    t.notOk(answers.some((answer) => answer.includes(secret)), 'no answer holds it')
    t.ok(service.log().includes('yt-dlp cookies stored'), 'the service log was captured at info level')
    t.notOk(service.log().includes(secret), 'the service log does not hold it')
    t.same(await filesContaining(environment.dataDir, secret), [])
  })
})
