/**
 * Playlists rewritten by api/files/playlist-rewrite.ts and dash-rewrite.ts,
 * played by a standard player over HTTP. Real outputs of the provisioned
 * ffmpeg are served from a loopback server where every file has a URL of its
 * own, with a query the way a presigned URL has, and the rewritten playlist
 * from another path, where its original relative names would not resolve:
 * it plays only if every entry was rewritten.
 */
import { execFile } from 'node:child_process'
import { readFile } from 'node:fs/promises'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { promisify } from 'node:util'
import t from 'tap'
import { rewriteDash } from '../../api/files/dash-rewrite.js'
import { playlistKind, rewriteHls } from '../../api/files/playlist-rewrite.js'
import { toolPath } from '../../api/local/tools.js'
import { filesUnder, makeHlsLadder, play } from '../harness/outputs.js'
import { scratchDir, type Teardown } from '../harness/scratch.js'

const run = promisify(execFile)


/**
 * Serves each file of `dir` at `/object/<n>/<name>?sig=<n>` (where its relative name no longer resolves
 * beside anything, and a query as on a presigned URL), and `pages` at their paths; records what is read.
 */
async function serveLikeABucket(t: Teardown, dir: string, names: string[]) {
  const pages = new Map<string, string>()
  const reads = new Set<string>()
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x')
    const page = pages.get(url.pathname)
    if (page !== undefined) return void res.writeHead(200).end(page)
    const [, object, index] = url.pathname.split('/')
    const name = names[Number(index)]
    if (object !== 'object' || name === undefined || url.pathname !== `/object/${index}/${name}` || url.searchParams.get('sig') !== index) return void res.writeHead(403).end()
    reads.add(name)
    void readFile(join(dir, name)).then((body) => res.writeHead(200).end(body))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())))
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return {
    reads,
    // The name stays at the path's end, as in a presigned URL: FFmpeg's HLS demuxer checks a segment's extension there.
    urlOf: (name: string) => (names.includes(name) ? `${base}/object/${names.indexOf(name)}/${name}?sig=${names.indexOf(name)}&x-id=GetObject` : null),
    page: (path: string, text: string) => {
      pages.set(path, text)
      return `${base}${path}`
    },
  }
}


t.test('a rewritten HLS master playlist plays every rendition\'s segments from URLs of their own', async (t) => {
  const dir = await scratchDir(t)
  await makeHlsLadder(dir)
  const names = await filesUnder(dir)
  const bucket = await serveLikeABucket(t, dir, names)
  // The variants' playable copies are pages of their own, as the playback copies are objects of their own.
  const copies = new Map<string, string>()
  for (const name of names.filter((n) => playlistKind(n) === 'hls' && n !== 'master.m3u8')) copies.set(name, `/copies/${copies.size}.m3u8`)
  const urlOf = (name: string) => (copies.has(name) ? `${bucket.urlOf(name)!.split('/object/')[0]}${copies.get(name)}` : bucket.urlOf(name))
  for (const [name, path] of copies) bucket.page(path, rewriteHls(await readFile(join(dir, name), 'utf8'), name, urlOf))
  const master = bucket.page('/play/master.m3u8', rewriteHls(await readFile(join(dir, 'master.m3u8'), 'utf8'), 'master.m3u8', urlOf))
  const played = await play(master)
  t.ok(played.duration > 3.8 && played.duration < 4.3, `4 s (${played.duration})`)
  t.ok(played.span > 3.8, `to the end (packets span ${played.span})`)
  t.ok([...bucket.reads].some((name) => name.endsWith('.ts')), 'segments were read from their own URLs')
})

t.test('a rewritten DASH manifest lists every segment by a URL of its own and opens in a standard player', async (t) => {
  const dir = await scratchDir(t)
  await run(toolPath('ffmpeg'), [
    '-hide_banner', '-loglevel', 'error', '-f', 'lavfi', '-i', 'testsrc2=size=160x120:rate=10:duration=4', '-f', 'lavfi', '-i', 'sine=duration=4',
    '-c:v', 'libx264', '-preset', 'ultrafast', '-g', '10', '-c:a', 'aac', '-f', 'dash', '-seg_duration', '1', 'manifest.mpd',
  ], { cwd: dir })
  const names = await filesUnder(dir)
  const bucket = await serveLikeABucket(t, dir, names)
  const original = await readFile(join(dir, 'manifest.mpd'), 'utf8')
  const rewritten = rewriteDash(original, 'manifest.mpd', bucket.urlOf, names.length)
  t.notMatch(rewritten, /SegmentTemplate/, 'every template became a list')
  t.match(rewritten, /<SegmentURL media="http:\/\/127\.0\.0\.1:\d+\/object\/\d+\/chunk-stream0-00001\.m4s\?sig=\d+&amp;x-id=GetObject"\/>/, 'URLs escaped for XML')
  t.equal(rewritten.match(/<SegmentURL /g)?.length, names.filter((n) => n.startsWith('chunk-')).length, 'every segment is listed')
  const played = await play(bucket.page('/play/manifest.mpd', rewritten))
  t.ok(played.duration > 3.8 && played.duration < 4.3, `its whole duration is read (${played.duration})`)
  // FFmpeg's DASH demuxer (Debian's 5.1; 8.1's code is the same) stops after the first two segments of any SegmentList,
  // from a disk as from HTTP: the list is read from URLs of their own, but FFmpeg is not the player to read all of it.
  t.ok(bucket.reads.has('init-stream0.m4s') && bucket.reads.has('chunk-stream0-00001.m4s'), 'the init and first segments are read from their own URLs')
  await t.rejects(play(bucket.page('/elsewhere/manifest.mpd', original)), 'the manifest as ffmpeg wrote it does not play from elsewhere')
})
