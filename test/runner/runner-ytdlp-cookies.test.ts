/**
 * The one-shot runner (main.ts) with an account's cookies.txt named by
 * FFKUBE_YTDLP_COOKIES_FILE:
 * yt-dlp sends the cookie, in the real jail too (the cookie directory is bound
 * into it), and the directory is empty once the runner is done, including the
 * cookie the site set during the download, which never reaches the work dir.
 */
import { randomBytes } from 'node:crypto'
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { pino } from 'pino'
import t from 'tap'
import { detectSandbox, toolsReadOnly } from '../../api/executors/sandbox-host.js'
import { toolPath } from '../../api/local/tools.js'
import { SANDBOX_ENV } from '../../contracts/sandbox.js'
import { YTDLP_COOKIES_FILE_ENV } from '../../contracts/ytdlp-cookies.js'
import { makeClip } from '../harness/media.js'
import { startS3 } from '../harness/s3.js'
import { scratchDir } from '../harness/scratch.js'
import { runRunner, specOf } from './harness.js'

/** Every regular file under `dir` whose bytes contain `needle`. */
async function filesContaining(dir: string, needle: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true })
  const found: string[] = []
  for (const entry of entries.filter((e) => e.isFile())) {
    if ((await readFile(join(entry.parentPath, entry.name))).includes(needle)) found.push(join(entry.parentPath, entry.name))
  }
  return found
}

t.test("the one-shot runner hands the account's cookies.txt to yt-dlp alone, and leaves none behind", async (t) => {
  const dir = await scratchDir(t)
  const [s3, clip] = await Promise.all([startS3(t), makeClip(join(dir, 'clip.mp4'), { seconds: 1, width: 160, height: 90 })])
  const clipBytes = await readFile(clip)
  const secret = randomBytes(16).toString('hex')
  // What the site sets during the download: yt-dlp writes it back to the cookies file at exit.
  const setBySite = randomBytes(16).toString('hex')
  const cookieHeaders: string[] = []
  const site = createServer((req, res) => {
    cookieHeaders.push(req.headers.cookie ?? '')
    if (!(req.headers.cookie ?? '').split(/;\s*/).includes(`session=${secret}`)) return res.writeHead(401).end()
    res.writeHead(200, { 'content-type': 'video/mp4', 'content-length': clipBytes.length, 'set-cookie': `fresh=${setBySite}; Path=/; Max-Age=3600` }).end(clipBytes)
  })
  await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => site.close(() => resolve())))
  const url = `http://127.0.0.1:${(site.address() as AddressInfo).port}/members/clip.mp4`

  const detected = detectSandbox(toolsReadOnly([toolPath('ffmpeg'), toolPath('ffprobe'), toolPath('yt-dlp')], [], { dataDir: dir }), pino({ level: 'silent' }))
  const jails: Array<[string, NodeJS.ProcessEnv]> = [['without a jail', {}]]
  if (detected.host?.bwrap) jails.push(['in the bwrap jail', { [SANDBOX_ENV]: JSON.stringify(detected.host) }])
  else t.comment(`no bwrap on this host (${detected.reason ?? ''}): only the unjailed run`)

  for (const [where, jail] of jails) {
    t.test(where, async (t) => {
      const cookieDir = join(dir, where.replaceAll(' ', '-'), 'ytdlp-cookies')
      await mkdir(cookieDir, { recursive: true, mode: 0o700 })
      const cookiesFile = join(cookieDir, 'cookies.txt')
      await writeFile(cookiesFile, `# Netscape HTTP Cookie File\n127.0.0.1\tFALSE\t/\tFALSE\t0\tsession\t${secret}\n`, { mode: 0o600 })
      const seenBefore = cookieHeaders.length
      const spec = specOf({ commandType: 'YTDLP_COMMAND', ytdlp: { inputUrls: { in_v: url }, formatSelector: 'best' } })
      const run = await runRunner(dir, spec, s3, { ALLOW_PRIVATE_NETWORKS: '1', [YTDLP_COOKIES_FILE_ENV]: cookiesFile, ...jail })
      t.equal(run.terminal.type, 'SUCCESS', JSON.stringify(run.terminal))
      t.ok(cookieHeaders.slice(seenBefore).some((header) => header.includes(`session=${secret}`)), 'the site saw the cookie')
      t.same(await readdir(cookieDir), [], 'the cookie directory is empty once the runner ends')
      const workDir = join(dir, `work-${spec.commandId}`)
      t.same(await filesContaining(workDir, secret), [], 'no file of the work dir holds the cookie')
      t.same(await filesContaining(workDir, setBySite), [], "nor the one the site set")
      t.notOk(run.raw.includes(secret) || run.raw.includes(setBySite), 'nor do the status events and the log chunks')
    })
  }

  t.test('without the variable yt-dlp sends no cookie, and the site asks for a sign-in', async (t) => {
    const seenBefore = cookieHeaders.length
    const spec = specOf({ commandType: 'YTDLP_COMMAND', ytdlp: { inputUrls: { in_v: url }, formatSelector: 'best' } })
    const run = await runRunner(dir, spec, s3, { ALLOW_PRIVATE_NETWORKS: '1' })
    t.match(run.terminal, { type: 'FAILED', error_status: 'SOURCE_LOGIN_REQUIRED' })
    t.ok(cookieHeaders.length > seenBefore, 'the site was asked')
    t.same(cookieHeaders.slice(seenBefore).filter(Boolean), [], 'with no cookie at all')
  })
})
