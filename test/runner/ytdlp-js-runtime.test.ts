import { join } from 'node:path'
import t from 'tap'
import { toolPath } from '../../api/local/tools.js'
import { runTool } from '../../contracts/tool-process.js'
import { ytdlpArgs } from '../../runner-image/runner/fetch/ytdlp-args.js'
import { makeClip, serveFiles } from '../harness/media.js'
import { scratchDir } from '../harness/scratch.js'

/** The runner's argv with --verbose before the URL, and without the proxy (no guard proxy here). */
function verboseArgv(url: string, without: string[] = []): string[] {
  const args = ytdlpArgs({ url, formatSelector: 'best', outputTemplate: 'inputs/in_a.%(ext)s', maxBytes: 1 << 30, ffmpegPath: toolPath('ffmpeg'), jsRuntimePath: process.execPath, socketTimeoutSeconds: 30, proxyUrl: '' })
  for (const flag of without) args.splice(args.indexOf(flag), 2)
  args.splice(args.indexOf('--'), 0, '--verbose')
  return args
}

t.test("yt-dlp takes the runner's own Node as the JavaScript runtime YouTube's challenges need", async (t) => {
  const dir = await scratchDir(t)
  const clip = await makeClip(join(dir, 'clip.mp4'), { seconds: 1, width: 320, height: 180 })
  const server = await serveFiles(t, [clip])
  const run = await runTool(toolPath('yt-dlp'), verboseArgv(server.url(clip)), { cwd: dir, timeoutMs: 120_000 })
  t.equal(run.code, 0, run.stderr.slice(-400))
  t.match(run.stderr, new RegExp(`\\[debug\\] JS runtimes: node-${process.versions.node.replace(/\./g, '\\.')}\\b`), 'yt-dlp found the Node it was given and accepts its version')
  const bare = await runTool(toolPath('yt-dlp'), verboseArgv(server.url(clip), ['--js-runtimes']), { cwd: dir, timeoutMs: 120_000 })
  t.match(bare.stderr, /\[debug\] JS runtimes: none/, 'without the flag it has none (deno, its default, is not installed)')
})
