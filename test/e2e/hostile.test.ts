import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import t from 'tap'
import { makeClip, serveFiles } from '../harness/media.js'
import { scratchDir } from '../harness/scratch.js'
import { Client, serviceEnvironment, startService } from './service.js'

t.test('with ALLOW_PRIVATE_NETWORKS off, URLs to loopback or metadata addresses end FAILED without a byte fetched', async (t) => {
  const dir = await scratchDir(t)
  const environment = await serviceEnvironment(t, { ALLOW_PRIVATE_NETWORKS: '0' })
  const [service, clip] = await Promise.all([startService(t, environment), makeClip(join(dir, 'secret.mp4'), { seconds: 1 })])
  const media = await serveFiles(t, [clip])
  let requests = 0
  const redirector = createServer((req, res) => {
    requests += 1
    res.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data/' }).end()
  })
  await new Promise<void>((resolve) => redirector.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => redirector.close(() => resolve())))
  const redirectUrl = `http://127.0.0.1:${(redirector.address() as AddressInfo).port}/clip.mp4`
  const api = new Client(service)

  const cases: Array<[string, string]> = [
    ['a URL to 127.0.0.1', media.url(clip)],
    ['a URL redirecting to 169.254.169.254', redirectUrl],
    ['a URL to the metadata address', 'http://169.254.169.254/latest/meta-data/'],
    ['an IPv4-mapped IPv6 loopback URL', 'http://[::ffff:127.0.0.1]:9/x.mp4'],
  ]
  for (const [name, url] of cases) {
    t.test(`run-ffmpeg-command: ${name}`, async (t) => {
      const { command_id } = await api.post('/run-ffmpeg-command', {
        input_files: { in_v: url },
        output_files: { out_x: 'x.mp4' },
        ffmpeg_command: 'ffmpeg -i {{in_v}} -c copy {{out_x}}',
      })
      const done = await api.waitForCommand(command_id)
      t.match(done, { status: 'FAILED', error_status: 'INPUT_FORBIDDEN_ADDRESS' })
      t.notOk('output_files' in done)
    })
    t.test(`store-file: ${name}`, async (t) => {
      const { file_id } = await api.post('/files/store-file', { file_url: url })
      t.match(await api.waitForFile(file_id), { status: 'FAILED', error_status: 'INPUT_FORBIDDEN_ADDRESS', storage_url: null })
    })
  }
  t.test('ytdlp-download of a loopback URL fails', async (t) => {
    const { command_id } = await api.post('/ytdlp-download', { input_urls: { in_v: media.url(clip) } })
    const done = await api.waitForCommand(command_id)
    t.equal(done.status, 'FAILED', JSON.stringify(done))
    t.notOk('output_files' in done)
  })
  t.equal(requests, 0, 'the loopback redirector itself was never contacted')
})
