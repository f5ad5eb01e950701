/**
 * The console in a real browser: Debian's Chromium (provisioned as bin/chromium)
 * driven by playwright-core, against the whole service as `npm start` runs it.
 * Controls are found by role and accessible name, as a screen reader finds them.
 * Screenshots of each page land in .tap/artefacts/console/; with
 * FFKUBE_CONSOLE_DOC_SCREENSHOTS=1 they are also copied to docs/api/console/.
 */
import { spawn } from 'node:child_process'
import { copyFile, mkdir, readFile, stat } from 'node:fs/promises'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import t from 'tap'
import { chromium, type Page } from 'playwright-core'
import { toolPath } from '../../api/local/tools.js'
import { eventually } from '../harness/eventually.js'
import { makeClip, serveFiles } from '../harness/media.js'
import { scratchDir } from '../harness/scratch.js'
import { Client, serviceEnvironment, startService } from '../e2e/service.js'

/** The service with the ffmpeg policy off, for `-re`: it paces a run at the clip's own speed, so its progress can be watched. */
const UNPOLICED = 'dist/test/e2e/unpoliced-service.js'
const ARTEFACTS = join('.tap', 'artefacts', 'console')
const DOCS = join('docs', 'api', 'console')
const KEY = /^ffsk_[0-9a-f]{64}$/

async function screenshot(page: Page, name: string): Promise<void> {
  const path = join(ARTEFACTS, `${name}.png`)
  await page.screenshot({ path, fullPage: true })
  if (process.env.FFKUBE_CONSOLE_DOC_SCREENSHOTS === '1') await copyFile(path, join(DOCS, `${name}.png`))
}

/** The status message a control's action announces (role=status). */
function statusText(page: Page) {
  return page.getByRole('status').filter({ hasText: /\S/ })
}

t.test('the console in Chromium: sign in, keys, a command watched to SUCCESS, a cancel, sign out', async (t) => {
  const built = await stat('dist/console/console.js').then(() => true, () => false)
  if (!built) throw new Error('dist/console is not built: scripts/build-console.sh (npm test runs it)')
  await mkdir(ARTEFACTS, { recursive: true })
  if (process.env.FFKUBE_CONSOLE_DOC_SCREENSHOTS === '1') await mkdir(DOCS, { recursive: true })

  const dir = await scratchDir(t)
  const environment = await serviceEnvironment(t)
  const [service, clip] = await Promise.all([startService(t, environment, UNPOLICED), makeClip(join(dir, 'clip.mp4'), { seconds: 8, width: 320, height: 180 })])
  const media = await serveFiles(t, [clip])
  const api = new Client(service)
  // The account webhook's receiver: answers every delivery 200.
  const receiver = createServer((request, response) => request.resume().on('end', () => response.writeHead(200).end()))
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => receiver.close(() => resolve())))
  const receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`

  // Chromium's sandbox refuses to run as root; as any other user it stays on.
  const browser = await chromium.launch({ executablePath: toolPath('chromium'), args: process.getuid?.() === 0 ? ['--no-sandbox'] : [] })
  t.teardown(() => browser.close())
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, locale: 'en-GB', timezoneId: 'UTC' })
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: service.baseUrl })
  const page = await context.newPage()
  page.setDefaultTimeout(60_000)
  // Page code as strings: this file is type-checked without the DOM's types.
  const clipboard = () => page.evaluate<string>('navigator.clipboard.readText()')

  t.test('signs in with an API key into an HttpOnly, SameSite=Strict, short-lived session, the key kept nowhere', async (t) => {
    await page.goto(`${service.baseUrl}/console/`)
    await page.getByLabel('API key').waitFor()
    await screenshot(page, '01-sign-in')
    await page.getByLabel('API key').fill(service.apiKey)
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.getByRole('navigation', { name: 'Console pages' }).waitFor()
    const [cookie, ...others] = await context.cookies()
    t.equal(others.length, 0, 'one cookie')
    t.match(cookie, { name: 'ffkube_console', httpOnly: true, sameSite: 'Strict', path: '/' })
    const lifetime = cookie!.expires - Date.now() / 1000
    t.ok(lifetime > 0 && lifetime <= 30 * 60 + 5, `expires within 30 minutes (${Math.round(lifetime)} s)`)
    t.equal(await page.evaluate<number>('localStorage.length + sessionStorage.length'), 0, 'nothing in web storage')
    t.notOk(page.url().includes(service.apiKey), 'the key is not in the URL')
    t.equal(await page.evaluate<string>('document.cookie'), '', 'the page cannot read the cookie')
  })

  let created = ''
  t.test('creates a key and copies it; the key works against the API at once', async (t) => {
    await page.getByRole('link', { name: 'API keys' }).click()
    await page.getByRole('heading', { name: 'API keys' }).waitFor()
    await page.getByRole('button', { name: 'Create key' }).click()
    await statusText(page).filter({ hasText: /Created key ffsk_…[0-9a-f]{4}/ }).waitFor()
    created = await clipboard()
    t.match(created, KEY, 'the new key is on the clipboard')
    const masked = `ffsk_…${created.slice(-4)}`
    const used = await fetch(`${service.baseUrl}/api/v1/commands`, { headers: { 'x-api-key': created } })
    t.equal(used.status, 200, 'a key created in the console works at once')

    await page.getByRole('button', { name: 'Hide key' }).click()
    await page.evaluate('navigator.clipboard.writeText("emptied")')
    await page.getByRole('button', { name: `Copy key ${masked}` }).click()
    await statusText(page).filter({ hasText: `Copied key ${masked}` }).waitFor()
    t.equal(await clipboard(), created, 'copying opens the sealed key again')
    await screenshot(page, '02-keys')
  })

  t.test('revokes the key; its next call gets 401', async (t) => {
    const masked = `ffsk_…${created.slice(-4)}`
    await page.getByRole('button', { name: `Revoke key ${masked}` }).click()
    await page.getByRole('button', { name: `Confirm revoking key ${masked}` }).click()
    await statusText(page).filter({ hasText: `Revoked key ${masked}` }).waitFor()
    const refused = await fetch(`${service.baseUrl}/api/v1/commands`, { headers: { 'x-api-key': created } })
    t.equal(refused.status, 401)
    t.equal(await page.getByRole('button', { name: `Copy key ${masked}` }).count(), 0, 'a revoked key has no copy button')
  })

  t.test('configures the account webhook', async (t) => {
    await page.getByRole('link', { name: 'Webhooks' }).click()
    await page.getByLabel('Webhook URL').fill(receiverUrl)
    await page.getByLabel('Signing secret (optional)').fill('console-secret')
    await page.getByRole('button', { name: 'Save webhook' }).click()
    await statusText(page).filter({ hasText: 'Webhook saved and active.' }).waitFor()
    t.match((await api.request('GET', '/webhook-config')).body, { url: receiverUrl, is_active: true, has_secret: true })
  })

  t.test('stores yt-dlp cookies and shows only what they cover', async (t) => {
    const value = 'console-cookie-value-0123456789'
    await page.getByRole('link', { name: 'yt-dlp cookies' }).click()
    await page.getByText('No cookies are stored').waitFor()
    await page.getByLabel('or its content').fill(`# Netscape HTTP Cookie File\n.example.com\tTRUE\t/\tTRUE\t0\tsid\t${value}\n`)
    await page.getByRole('button', { name: 'Store cookies' }).click()
    await statusText(page).filter({ hasText: 'Stored 1 cookie for example.com.' }).waitFor()
    t.match((await api.request('GET', '/ytdlp-cookies')).body, { cookie_count: 1, domains: ['example.com'] })
    t.equal(await page.getByLabel('or its content').inputValue(), '', 'the form keeps no copy')
    t.notOk((await page.content()).includes(value), 'the page shows no cookie')
    await screenshot(page, '08b-ytdlp-cookies')
    await page.getByRole('button', { name: 'Delete cookies' }).click()
    await statusText(page).filter({ hasText: 'Cookies deleted.' }).waitFor()
    t.equal((await api.request('GET', '/ytdlp-cookies')).status, 404)
  })

  t.test('watches a command go to SUCCESS with its progress, then shows its outputs and logs', async (t) => {
    const { command_id } = await api.post('/run-ffmpeg-command', {
      input_files: { in_video: media.url(clip) },
      output_files: { out_video: 'paced.mp4' },
      ffmpeg_command: 'ffmpeg -re -i {{in_video}} -c:v libx264 -preset ultrafast -c:a copy {{out_video}}',
      metadata: { from: 'browser test' },
    })
    await page.getByRole('link', { name: 'Commands' }).click()
    await page.getByRole('link', { name: `Command ${command_id}` }).click()
    await page.getByRole('heading', { name: `Command ${command_id}` }).waitFor()
    const progress = page.getByRole('progressbar', { name: 'Command progress' })
    // An event of the stream while the paced run is under way: PROCESSING with a figure between the ends.
    // (Read through the locator: the page's CSP refuses the eval waitForFunction would need.)
    const between = await eventually('the progress bar to show a figure between 0 and 100', async () => {
      const value = Number((await progress.getAttribute('value', { timeout: 1_000 })) ?? NaN)
      return value > 0 && value < 100 ? value : null
    }, 60_000)
    t.ok(between > 0 && between < 100, `progress ${between}% while it ran`)
    t.match(await page.getByLabel('Command status').textContent(), /PROCESSING/)
    await screenshot(page, '04-command-running')
    await page.getByLabel('Command status').filter({ hasText: 'SUCCESS' }).waitFor()
    t.equal(await progress.getAttribute('value'), '100')
    await page.getByRole('link', { name: 'Download paced.mp4' }).waitFor()
    await page.getByRole('button', { name: 'Show logs' }).click()
    await page.getByLabel('Command logs').filter({ hasText: 'ffmpeg' }).waitFor()
    t.match(await page.getByLabel('Original request').textContent(), /-re -i \{\{in_video\}\}/)
    await screenshot(page, '05-command-done')
    await page.getByRole('link', { name: 'All commands' }).click()
    await page.getByRole('link', { name: `Command ${command_id}` }).waitFor()
    await screenshot(page, '03-commands')
  })

  t.test('cancels a running command', async (t) => {
    const { command_id } = await api.post('/run-ffmpeg-command', {
      input_files: { in_video: media.url(clip) },
      output_files: {},
      ffmpeg_command: 'ffmpeg -stream_loop -1 -re -i {{in_video}} -f null -',
    })
    await page.goto(`${service.baseUrl}/console/#/commands/${command_id}`)
    await page.getByLabel('Command status').filter({ hasText: 'PROCESSING' }).waitFor()
    await page.getByRole('button', { name: 'Cancel command' }).click()
    await page.getByLabel('Command status').filter({ hasText: 'FAILED' }).waitFor()
    await page.getByText('CANCELLED: ').waitFor()
    t.equal(await page.getByRole('button', { name: 'Cancel command' }).count(), 0, 'an ended command has no cancel button')
    t.match((await api.request('GET', `/commands/${command_id}`)).body, { status: 'FAILED', error_status: 'CANCELLED' })
  })

  t.test('lists every file of an HLS output with its own download link', async (t) => {
    const { command_id } = await api.post('/run-ffmpeg-command', {
      input_files: { in_video: media.url(clip) },
      output_files: { out_hls: 'playlist.m3u8' },
      // This service runs without the policy (UNPOLICED), which is what would move -hls_segment_filename into the
      // output's folder: the muxer's default names (playlist0.ts, …) sit beside the playlist already.
      ffmpeg_command: 'ffmpeg -t 3 -i {{in_video}} -c:v libx264 -preset ultrafast -g 25 -c:a aac -f hls -hls_time 1 -hls_playlist_type vod {{out_hls}}',
    })
    const done = await api.waitForCommand(command_id)
    t.equal(done.status, 'SUCCESS', JSON.stringify(done.error_message))
    const { file_count, files } = done.output_files.out_hls as { file_count: number; files: { filename: string; storage_url: string }[] }
    t.ok(file_count >= 4, `the playlist and its three segments at least (${file_count} files)`)
    await page.goto(`${service.baseUrl}/console/#/commands/${command_id}`)
    await page.getByRole('link', { name: 'Download playlist.m3u8' }).waitFor()
    await page.getByText(`${file_count} files of out_hls`).click()
    const list = page.getByRole('list', { name: 'Files of out_hls' })
    t.equal(await list.getByRole('link').count(), file_count, `a link for each of the ${file_count} files`)
    const segment = files.find((f) => f.filename === 'playlist2.ts')!
    t.equal(await list.getByRole('link', { name: 'Download playlist2.ts of out_hls' }).getAttribute('href'), segment.storage_url, 'each link is the file\'s own URL')
    await screenshot(page, '05b-command-many-files')
  })

  t.test('shows files, presets, webhooks, storage destinations, and the plan with its storage quota and 30 days of usage by day', async (t) => {
    const pages: [string, string, string][] = [
      ['Files', 'Files', '06-files'],
      ['Presets', 'Presets', '07-presets'],
      ['Webhooks', 'Webhooks', '08-webhooks'],
      ['Storage destinations', 'Storage destinations', '09-destinations'],
      ['Plan and usage', 'Plan and usage', '10-plan-and-usage'],
    ]
    for (const [link, heading, name] of pages) {
      await page.getByRole('link', { name: link }).click()
      await page.getByRole('heading', { name: heading, level: 1 }).waitFor()
      if (name === '06-files') {
        await page.getByRole('link', { name: /^Download file_/ }).first().waitFor()
        t.equal(await page.getByRole('columnheader', { name: 'Expires' }).count(), 1, 'the files table says when each file expires')
        // The service's key is on the business plan, which keeps files 90 days: the newest file's row shows a date.
        const expiry = await page.getByRole('row').nth(1).getByRole('cell').nth(6).textContent()
        t.notOk(['never', '—', ''].includes(expiry ?? ''), `the newest file expires on a date (${expiry})`)
      }
      if (name === '07-presets') await page.getByRole('button', { name: /^Run preset / }).first().waitFor()
      if (name === '10-plan-and-usage') await page.getByRole('table', { name: /^Usage by UTC day from/ }).waitFor()
      if (name === '08-webhooks') {
        // The deliveries of the two finished commands, and one sent again.
        const redeliver = page.getByRole('button', { name: /^Redeliver the webhook of / })
        await eventually('the two completions in the delivery log', async () => {
          if ((await redeliver.count()) >= 2) return true
          await page.reload({ waitUntil: 'networkidle' })
          return (await redeliver.count()) >= 2
        }, 60_000)
        await redeliver.first().click()
        await statusText(page).filter({ hasText: /^Redelivery queued \(whd_/ }).waitFor()
      }
      if (name === '09-destinations') {
        const bucket = await environment.s3.createBucket()
        const fields: [string, string][] = [
          ['Name', 'customer-bucket'],
          // A host name, not an IP: raw IP endpoints are refused even with ALLOW_PRIVATE_NETWORKS.
          ['Endpoint URL', environment.s3.endpoint.replace('127.0.0.1', 'localhost')],
          ['Region', environment.s3.region],
          ['Bucket', bucket],
          ['Key prefix (optional)', 'ffkube'],
          ['Access key id', environment.s3.accessKeyId],
          ['Secret access key', environment.s3.secretAccessKey],
        ]
        for (const [label, value] of fields) await page.getByLabel(label, { exact: true }).fill(value)
        // The S3 server on loopback: the bucket in the path, as no bucket.localhost resolves.
        await page.getByRole('checkbox', { name: /^Path-style addressing/ }).check()
        await page.getByRole('button', { name: 'Create destination' }).click()
        await statusText(page).filter({ hasText: /^Created sd_[0-9a-f]{32}\.$/ }).waitFor()
        await page.getByRole('button', { name: 'Test the connection of customer-bucket' }).click()
        const tested = statusText(page).filter({ hasText: /^customer-bucket: the connection test / })
        await tested.waitFor()
        t.equal(await tested.textContent(), 'customer-bucket: the connection test passed.')
      }
      await screenshot(page, name)
    }
    // Newest day first, its commands as the API counts them; the window's totals in the footer.
    const usage = (await api.request('GET', '/usage')).body
    const today = usage.by_day.at(-1)
    const todayCells = await page.getByRole('row', { name: new RegExp(`^${today.date}`) }).getByRole('cell').allTextContents()
    t.same(todayCells.slice(0, 3), ['3', '2', '1'], 'three commands today: two succeeded, one failed')
    t.match(todayCells.at(-1), new RegExp(`in ${today.files_stored} files$`))
    t.same((await page.getByRole('row', { name: /^Total/ }).getByRole('cell').allTextContents()).slice(0, 3), ['3', '2', '1'])
    t.match(await page.getByLabel('Storage').textContent(), /^[\d.]+ (B|KiB|MiB) stored of the plan's 1\.0 TiB quota \(0\.0 %\)\. Uploads/)
    t.ok(usage.storage.stored_bytes > 0, 'the outputs and uploads of this test are counted')
    t.equal(await page.getByLabel('Plan', { exact: true }).textContent(), 'business')
  })

  t.test('signs in with a one-time link from the admin CLI, which a visit alone does not use up', async (t) => {
    const { account_id } = JSON.parse(await readFile(join(environment.dataDir, 'local-api-key.json'), 'utf8')) as { account_id: string }
    const cli = spawn(process.execPath, ['dist/api/admin/cli.js', 'console-link', '--account', account_id, '--base-url', service.baseUrl], { env: environment.env, stdio: ['ignore', 'pipe', 'inherit'] })
    let out = ''
    cli.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()))
    t.equal(await new Promise((resolve) => cli.once('exit', resolve)), 0, 'console-link exits 0')
    const { url } = JSON.parse(out) as { url: string }
    const other = await browser.newContext({ viewport: { width: 1280, height: 800 } })
    t.teardown(() => other.close())
    const linkPage = await other.newPage()
    linkPage.setDefaultTimeout(60_000)
    // A prefetcher's visit: the page loads, nothing is sent.
    await linkPage.goto(url)
    await linkPage.getByRole('button', { name: 'Sign in with this link' }).waitFor()
    await linkPage.reload()
    await linkPage.getByRole('button', { name: 'Sign in with this link' }).click()
    await linkPage.getByRole('heading', { name: 'Commands', level: 1 }).waitFor()
    t.notOk(linkPage.url().includes(url.split('/').pop()!), 'the spent token is gone from the address bar')
    t.match(await other.cookies(), [{ name: 'ffkube_console', httpOnly: true, sameSite: 'Strict' }])
    await linkPage.goto(url)
    await linkPage.getByRole('button', { name: 'Sign in with this link' }).click()
    await linkPage.getByRole('alert').filter({ hasText: /used already or expired/ }).waitFor()
  })

  t.test('signs out: the cookie is gone and the session with it', async (t) => {
    const [cookie] = await context.cookies()
    await page.getByRole('button', { name: 'Sign out' }).click()
    await page.getByLabel('API key').waitFor()
    t.same(await context.cookies(), [], 'the cookie is cleared')
    const reused = await fetch(`${service.baseUrl}/console/api/session`, { headers: { cookie: `${cookie!.name}=${cookie!.value}` } })
    t.equal(reused.status, 401, 'the old cookie opens nothing')
  })
})
