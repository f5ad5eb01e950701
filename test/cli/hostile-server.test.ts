/**
 * The CLI against a server that lies: output names that try to leave the
 * directory or plant dotfiles, and an event stream that keeps failing. A
 * real HTTP server on loopback, speaking the API's wire format.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { readdir, readFile, stat } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { scratchDir } from '../harness/scratch.js'
import { cliEnvironment, runCli } from './cli-process.js'

const COMMAND_ID = '11111111-2222-4333-8444-555555555555'

function output(filename: string, url: string) {
  return {
    file_id: `file_${filename.length}`, filename, storage_url: url, storage_location: 'INTERNAL', external_uri: null, external_object_key: null,
    status: 'STORED', service_store_type: 'OUTPUT', is_deleted: false, size_mbytes: 0, duration: null, file_type: null, file_format: null,
    codec: null, pixel_format: null, mime_type: 'text/plain', width: null, height: null, frame_rate: null, bitrate_video_kb: null, bitrate_audio_kb: null,
  }
}

function command(base: string, status: 'PROCESSING' | 'SUCCESS') {
  const names = ['../../escaped.txt', '.bashrc', '/etc/cron.d/evil', 'C:\\Windows\\evil.bat', '..', 'a\u0000b\nc.txt']
  return {
    command_id: COMMAND_ID, status, command_type: 'FFMPEG_COMMAND', total_processing_seconds: null, ffmpeg_command_run_seconds: null, metadata: null,
    error_status: null, error_message: null, original_request: { input_files: {}, output_files: {} },
    progress: status === 'SUCCESS' ? 100 : 50, processing_stage: status === 'SUCCESS' ? null : 'RUNNING',
    ...(status === 'SUCCESS' ? { output_files: Object.fromEntries(names.map((name, i) => [`out_${i}`, output(name, `${base}/blob/${i}`)])) } : {}),
  }
}

t.test('a hostile server', async (t) => {
  const dir = await scratchDir(t)
  const seen: string[] = []
  let gets = 0
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    seen.push(`${req.method} ${req.url}`)
    if (req.url?.startsWith('/blob/')) return void res.end(`content ${req.url}`)
    if (req.url === `/api/v1/commands/${COMMAND_ID}/events`) {
      // Always failing: the CLI must give up on the stream and poll.
      return void res.writeHead(502, { 'content-type': 'text/html' }).end('<h1>Bad gateway</h1>')
    }
    if (req.url === `/api/v1/commands/${COMMAND_ID}`) {
      gets += 1
      return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(command(base, gets < 2 ? 'PROCESSING' : 'SUCCESS')))
    }
    res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"NOT_FOUND","message":"no"}')
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())))
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  const user = await cliEnvironment(join(dir, 'deep', 'cwd'), { FFKUBE_URL: baseUrl, FFKUBE_API_KEY: 'ffsk_test' })

  t.test('when the event stream keeps failing, wait polls; hostile output names stay inside the directory', async (t) => {
    const result = await runCli(user, ['wait', COMMAND_ID])
    t.equal(result.code, 0, result.stderr)
    t.match(result.stderr, /the event stream failed \(.*502.*\); polling instead/)
    t.equal(seen.filter((line) => line.endsWith('/events')).length, 3, 'three stream attempts, then polling')
    const written = (await readdir(user.cwd)).filter((name) => name !== '.home').sort()
    t.same(written, ['a_b_c.txt', 'bashrc', 'escaped.txt', 'evil', 'evil.bat', 'out_4'])
    t.equal(await readFile(join(user.cwd, 'bashrc'), 'utf8'), 'content /blob/1')
    for (const outside of [join(dir, 'escaped.txt'), join(dir, 'deep', 'escaped.txt'), join(user.cwd, '.bashrc')]) {
      t.notOk(await stat(outside).catch(() => null), `${outside} was not written`)
    }
  })

  t.test('a second download of the same outputs refuses to replace them without --force', async (t) => {
    const result = await runCli(user, ['wait', COMMAND_ID])
    t.equal(result.code, 2)
    t.match(result.stderr, /exists; pass --force/)
    t.notOk((await readdir(user.cwd)).some((name) => name.endsWith('.partial')), 'no partial file is left behind')
    const forced = await runCli(user, ['wait', '--force', COMMAND_ID])
    t.equal(forced.code, 0, forced.stderr)
  })
})
