import { execFile } from 'node:child_process'
import { createReadStream } from 'node:fs'
import { stat } from 'node:fs/promises'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { basename } from 'node:path'
import { promisify } from 'node:util'
import { toolPath } from '../../api/local/tools.js'
import type { Teardown } from './scratch.js'

const run = promisify(execFile)

/** Options for a test clip made by ffmpeg's lavfi sources: a test pattern and a tone. */
export interface ClipOptions {
  seconds?: number
  width?: number
  height?: number
  fps?: number
}

/** Generates an H.264/AAC MP4 clip at `path` from lavfi sources, no input files needed. */
export async function makeClip(path: string, options: ClipOptions = {}): Promise<string> {
  const { seconds = 2, width = 320, height = 240, fps = 25 } = options
  await run(toolPath('ffmpeg'), [
    '-hide_banner', '-loglevel', 'error', '-y',
    '-f', 'lavfi', '-i', `testsrc2=size=${width}x${height}:rate=${fps}:duration=${seconds}`,
    '-f', 'lavfi', '-i', `sine=frequency=440:sample_rate=48000:duration=${seconds}`,
    '-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p', '-c:a', 'aac', '-shortest',
    path,
  ])
  return path
}

/** The grey pixels of a region (`crop` filter arguments) of an image, for comparing two frames where it matters. */
export async function grayRegion(path: string, crop: string): Promise<Buffer> {
  const { stdout } = await run(toolPath('ffmpeg'), ['-v', 'error', '-i', path, '-vf', `crop=${crop}`, '-f', 'rawvideo', '-pix_fmt', 'gray', '-'], { encoding: 'buffer', maxBuffer: 1 << 24 })
  return stdout
}

/** The duration ffprobe reads from a media file's container, in seconds. */
export async function probeDuration(path: string): Promise<number> {
  const { stdout } = await run(toolPath('ffprobe'), [
    '-v', 'error', '-show_entries', 'format=duration', '-of', 'default=noprint_wrappers=1:nokey=1', path,
  ])
  return Number(stdout.trim())
}

/** A loopback HTTP server (or one on `host`) that serves the given files by their base names. */
export async function serveFiles(t: Teardown, files: string[], options: { host?: string } = {}): Promise<{ url(file: string): string }> {
  const host = options.host ?? '127.0.0.1'
  const byName = new Map(files.map((file) => [basename(file), file]))
  const server = createServer(async (req, res) => {
    const file = byName.get(decodeURIComponent((req.url ?? '/').slice(1)))
    if (!file) {
      res.writeHead(404).end()
      return
    }
    const { size } = await stat(file)
    res.writeHead(200, { 'content-type': 'video/mp4', 'content-length': size })
    // 1 MiB reads: the outside world's server, kept from costing the machine more than it must (64 KiB reads paused and resumed the response per read).
    createReadStream(file, { highWaterMark: 1024 * 1024 }).pipe(res)
  })
  await new Promise<void>((resolve) => server.listen(0, host, resolve))
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())))
  const { port } = server.address() as AddressInfo
  return { url: (file) => `http://${host}:${port}/${encodeURIComponent(basename(file))}` }
}

