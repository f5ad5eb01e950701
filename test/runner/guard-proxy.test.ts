import { createReadStream } from 'node:fs'
import { createServer, type RequestListener } from 'node:http'
import { connect, type AddressInfo } from 'node:net'
import { join } from 'node:path'
import t from 'tap'
import { toolPath } from '../../api/local/tools.js'
import { classifyAddress } from '../../contracts/url-guard.js'
import { startGuardProxy } from '../../runner-image/runner/fetch/guard-proxy.js'
import { downloadAll } from '../../runner-image/runner/fetch/ytdlp-downloads.js'
import { makeClip } from '../harness/media.js'
import { scratchDir, type Teardown } from '../harness/scratch.js'

async function serve(t: Teardown, host: string, handler: RequestListener): Promise<string> {
  const server = createServer(handler)
  await new Promise<void>((resolve) => server.listen(0, host, resolve))
  t.teardown(() => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()) }))
  return `http://${host}:${(server.address() as AddressInfo).port}`
}

// 127.0.0.2 plays the public internet; every other address gets the real rule.
const trustOne = (address: string) => (address === '127.0.0.2' ? { forbidden: false as const } : classifyAddress(address))
const guard = { allowPrivateNetworks: false, classify: trustOne }

async function connectLine(proxyUrl: string, target: string): Promise<string> {
  const { hostname, port } = new URL(proxyUrl)
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => socket.write(`CONNECT ${target} HTTP/1.1\r\nhost: ${target}\r\n\r\n`))
    socket.once('data', (data) => {
      resolve(data.toString('utf8').split('\r\n')[0] as string)
      socket.destroy()
    })
    socket.once('error', reject)
  })
}

t.test('yt-dlp cannot be redirected into the network through the guard proxy', async (t) => {
  const dir = await scratchDir(t)
  const clip = await makeClip(join(dir, 'clip.mp4'), { seconds: 1 })
  let insideRequests = 0
  const inside = await serve(t, '127.0.0.1', (_req, res) => {
    insideRequests++
    res.end('secret')
  })
  const outside = await serve(t, '127.0.0.2', (req, res) => {
    if (req.url === '/clip.mp4') {
      res.writeHead(200, { 'content-type': 'video/mp4' })
      createReadStream(clip).pipe(res)
    } else if (req.url === '/to-inside.mp4') res.writeHead(302, { location: `${inside}/clip.mp4` }).end()
    else if (req.url === '/to-metadata.mp4') res.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data/' }).end()
    else res.writeHead(404).end()
  })
  const outcome = await downloadAll(
    { in_ok: `${outside}/clip.mp4`, in_inside: `${outside}/to-inside.mp4`, in_meta: `${outside}/to-metadata.mp4` },
    { ytdlpPath: toolPath('yt-dlp'), ffmpegPath: toolPath('ffmpeg'), jsRuntimePath: process.execPath, workDir: dir, formatSelector: 'best', maxBytes: 1 << 30, timeoutMs: 60_000, guard },
  )
  t.same(Object.keys(outcome.downloaded), ['in_ok'], 'the public URL downloads through the proxy')
  t.match(outcome.failed, {
    in_inside: { error_status: 'INPUT_FORBIDDEN_ADDRESS', error_message: /127.0.0.1 is a loopback/ },
    in_meta: { error_status: 'INPUT_FORBIDDEN_ADDRESS', error_message: /169.254.169.254 is a linkLocal/ },
  })
  t.equal(insideRequests, 0, 'the loopback server never saw a request')
})

t.test('the guard proxy tunnels https CONNECT only to allowed addresses', async (t) => {
  const proxy = await startGuardProxy({ ...guard, resolve: async (host) => (host === 'inside.example' ? ['10.0.0.1'] : ['127.0.0.2']) })
  t.teardown(() => proxy.close())
  const outside = await serve(t, '127.0.0.2', (_req, res) => res.end())
  const port = new URL(outside).port
  t.equal(await connectLine(proxy.url, `127.0.0.2:${port}`), 'HTTP/1.1 200 Connection Established')
  t.equal(await connectLine(proxy.url, `public.example:${port}`), 'HTTP/1.1 200 Connection Established')
  t.equal(await connectLine(proxy.url, `127.0.0.1:${port}`), 'HTTP/1.1 403 Forbidden')
  t.equal(await connectLine(proxy.url, `inside.example:${port}`), 'HTTP/1.1 403 Forbidden')
  t.equal(await connectLine(proxy.url, '[::ffff:169.254.169.254]:443'), 'HTTP/1.1 403 Forbidden')
  t.same(proxy.takeRefusals().length, 3)
})
