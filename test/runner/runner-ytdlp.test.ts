import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import t from 'tap'
import { makeClip, serveFiles } from '../harness/media.js'
import { startS3 } from '../harness/s3.js'
import { scratchDir } from '../harness/scratch.js'
import { runRunner, specOf } from './harness.js'

const PRIVATE_OK = { ALLOW_PRIVATE_NETWORKS: '1' }

t.test('yt-dlp commands, end to end from a local HTTP server', async (t) => {
  const dir = await scratchDir(t)
  const s3 = await startS3(t)
  const clip = await makeClip(join(dir, 'clip.mp4'), { seconds: 1, width: 640, height: 360 })
  const server = await serveFiles(t, [clip])
  const missing = server.url('gone.mp4')

  t.test('downloads a URL capped at 720p to out_<suffix>', async (t) => {
    const spec = specOf({ commandType: 'YTDLP_COMMAND', ytdlp: { inputUrls: { in_clip: server.url(clip) }, formatSelector: '720p' } })
    const run = await runRunner(dir, spec, s3, PRIVATE_OK)
    t.equal(run.terminal.type, 'SUCCESS', JSON.stringify(run.terminal))
    if (run.terminal.type !== 'SUCCESS') return
    t.match(run.terminal.output_files, { out_clip: { filename: 'clip.mp4', width: 640, height: 360, file_type: 'video', object_key: `outputs/${spec.commandId}/clip.mp4` } })
    t.equal(run.terminal.failed_files, null)
    t.equal(run.terminal.ffmpeg_command_run_seconds, null, 'a download-only command runs no ffmpeg')
  })

  t.test('succeeds with failed_files when some URLs of a download-only batch fail', async (t) => {
    const spec = specOf({ commandType: 'YTDLP_COMMAND', ytdlp: { inputUrls: { in_good: server.url(clip), in_bad: missing }, formatSelector: 'best' } })
    const run = await runRunner(dir, spec, s3, PRIVATE_OK)
    t.equal(run.terminal.type, 'SUCCESS', JSON.stringify(run.terminal))
    if (run.terminal.type !== 'SUCCESS') return
    t.same(Object.keys(run.terminal.output_files), ['out_good'])
    t.match(run.terminal.failed_files, { in_bad: { url: missing, error_status: /^(SOURCE_UNAVAILABLE|DOWNLOAD_FAILED)$/, error_message: /^input in_bad: / } })
  })

  t.test('fails when every URL of a download-only batch fails', async (t) => {
    const spec = specOf({ commandType: 'YTDLP_COMMAND', ytdlp: { inputUrls: { in_bad: missing }, formatSelector: 'best' } })
    const run = await runRunner(dir, spec, s3, PRIVATE_OK)
    t.match(run.terminal, { type: 'FAILED', error_message: /every download failed/, failed_files: { in_bad: { url: missing } } })
  })

  t.test('runs the post-processing ffmpeg on the downloads', async (t) => {
    const spec = specOf({
      commandType: 'YTDLP_COMMAND',
      ytdlp: { inputUrls: { in_clip: server.url(clip) }, formatSelector: 'best' },
      outputFiles: { out_small: 'small.mp4' },
      ffmpegCommands: ['-i {{in_clip}} -vf scale=160:-2 -c:v libx264 -preset ultrafast -c:a copy {{out_small}}'],
    })
    const run = await runRunner(dir, spec, s3, PRIVATE_OK)
    t.equal(run.terminal.type, 'SUCCESS', JSON.stringify(run.terminal))
    if (run.terminal.type !== 'SUCCESS') return
    t.match(run.terminal.output_files, { out_small: { width: 160, height: 90 } })
    t.ok((run.terminal.ffmpeg_command_run_seconds ?? 0) > 0)
  })

  t.test('runs no ffmpeg and fails when one download of a post-processing command fails', async (t) => {
    const spec = specOf({
      commandType: 'YTDLP_COMMAND',
      ytdlp: { inputUrls: { in_clip: server.url(clip), in_bad: missing }, formatSelector: 'best' },
      outputFiles: { out_small: 'small.mp4' },
      ffmpegCommands: ['-i {{in_clip}} -i {{in_bad}} -map 0 -c copy {{out_small}}'],
    })
    const run = await runRunner(dir, spec, s3, PRIVATE_OK)
    t.match(run.terminal, { type: 'FAILED', ffmpeg_command_run_seconds: null, error_message: /a download failed, so ffmpeg did not run/, failed_files: { in_bad: { url: missing } } })
    t.notOk(run.events.some((e) => e.type === 'PROCESSING' && e.stage === 'RUNNING'))
  })

  t.test('names bot checks, sign-in walls, missing pages and pages without a video, from yt-dlp runs against a site built here', async (t) => {
    // What such sites answer: a Cloudflare challenge (403 with cf-mitigated), rate limiting, a members' area, a removed page, a page with no video.
    const site = createServer((req, res) => {
      if (req.url === '/challenge') return res.writeHead(403, { 'cf-mitigated': 'challenge', 'content-type': 'text/html' }).end('<title>Just a moment...</title>')
      if (req.url === '/busy') return res.writeHead(429, { 'content-type': 'text/plain' }).end('slow down')
      if (req.url === '/members') return res.writeHead(401, { 'www-authenticate': 'Basic realm="members"' }).end()
      if (req.url === '/article') return res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><html><head><title>An article</title></head><body><p>No video here.</p></body></html>')
      return res.writeHead(404).end()
    })
    await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve))
    t.teardown(() => new Promise<void>((resolve) => site.close(() => resolve())))
    const base = `http://127.0.0.1:${(site.address() as AddressInfo).port}`
    const expected = {
      in_challenge: ['/challenge', 'SOURCE_BOT_CHECK', /bot check/],
      in_busy: ['/busy', 'SOURCE_BOT_CHECK', /bot check/],
      in_members: ['/members', 'SOURCE_LOGIN_REQUIRED', /signed-in users/],
      in_gone: ['/gone', 'SOURCE_UNAVAILABLE', /gone or unavailable/],
      in_article: ['/article', 'SOURCE_UNSUPPORTED_URL', /found no video/],
    } as const
    const inputUrls = Object.fromEntries(Object.entries(expected).map(([alias, [path]]) => [alias, `${base}${path}`]))
    const spec = specOf({ commandType: 'YTDLP_COMMAND', ytdlp: { inputUrls, formatSelector: 'best' } })
    const run = await runRunner(dir, spec, s3, PRIVATE_OK)
    t.match(run.terminal, { type: 'FAILED', error_message: /every download failed/ })
    if (run.terminal.type !== 'FAILED') return
    for (const [alias, [path, status, hint]] of Object.entries(expected)) {
      const failed = run.terminal.failed_files?.[alias]
      t.equal(failed?.error_status, status, `${path}: ${failed?.error_message}`)
      t.match(failed?.error_message, hint, `${path}: says what it means before yt-dlp's own words`)
      t.match(failed?.error_message, /ERROR: /, `${path}: keeps yt-dlp's error line`)
    }
  })

  t.test('refuses a loopback URL when private networks are not allowed, without calling yt-dlp', async (t) => {
    const spec = specOf({ commandType: 'YTDLP_COMMAND', ytdlp: { inputUrls: { in_clip: server.url(clip) }, formatSelector: 'best' } })
    const run = await runRunner(dir, spec, s3, { YTDLP_PATH: '/nonexistent/yt-dlp' })
    t.match(run.terminal, { type: 'FAILED', error_status: 'INPUT_FORBIDDEN_ADDRESS', failed_files: { in_clip: { error_message: /127.0.0.1 is a loopback/ } } })
  })

  t.test('refuses a post-processing command the policy refuses, before downloading', async (t) => {
    const spec = specOf({
      commandType: 'YTDLP_COMMAND',
      ytdlp: { inputUrls: { in_clip: server.url(clip) }, formatSelector: 'best' },
      outputFiles: { out_x: 'x.mp4' },
      ffmpegCommands: ['-i {{in_clip}} -i /etc/passwd {{out_x}}'],
    })
    const run = await runRunner(dir, spec, s3, PRIVATE_OK)
    t.match(run.terminal, { type: 'FAILED', error_status: 'INVALID_COMMAND' })
    t.notOk(run.events.some((e) => e.type === 'PROCESSING' && e.stage === 'DOWNLOADING'))
  })
})
