import t from 'tap'
import { execFile } from 'node:child_process'
import { stat } from 'node:fs/promises'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { toolPath } from '../../api/local/tools.js'
import { makeClip, probeDuration, serveFiles } from '../harness/media.js'
import { scratchDir } from '../harness/scratch.js'

const run = promisify(execFile)

t.test('transcodes a generated clip and reads its duration with ffprobe', async (t) => {
  const dir = await scratchDir(t)
  const source = await makeClip(join(dir, 'source.mp4'), { seconds: 3 })
  const output = join(dir, 'small.mp4')
  await run(toolPath('ffmpeg'), [
    '-hide_banner', '-loglevel', 'error', '-i', source,
    '-vf', 'scale=160:-2', '-c:v', 'libx264', '-preset', 'ultrafast', '-c:a', 'copy', output,
  ])
  const duration = await probeDuration(output)
  t.ok(Math.abs(duration - 3) < 0.1, `duration ${duration} s is the source's 3 s`)
  const { stdout } = await run(toolPath('ffprobe'), [
    '-v', 'error', '-select_streams', 'v:0', '-show_entries', 'stream=width,height', '-of', 'csv=p=0', output,
  ])
  t.equal(stdout.trim(), '160,120', 'the video was scaled')
})

t.test('downloads a file with yt-dlp from a local HTTP server', async (t) => {
  const dir = await scratchDir(t)
  const clip = await makeClip(join(dir, 'clip.mp4'), { seconds: 1 })
  const server = await serveFiles(t, [clip])
  const { stdout } = await run(toolPath('yt-dlp'), [
    '--ignore-config', '--no-plugin-dirs', '--no-playlist', '--no-progress', '--print', 'after_move:filepath',
    '-o', join(dir, 'download.%(ext)s'), '--', server.url(clip),
  ])
  const downloaded = stdout.trim()
  t.equal(downloaded, join(dir, 'download.mp4'))
  t.equal((await stat(downloaded)).size, (await stat(clip)).size, 'every byte arrived')
  t.ok(Math.abs((await probeDuration(downloaded)) - 1) < 0.1, 'the download is the clip')
})
