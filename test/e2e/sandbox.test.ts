/**
 * Local mode's sandbox, through HTTP, with the argument policy turned off
 * (test/e2e/unpoliced-service.ts): what ffmpeg can reach is then bounded by
 * the sandbox alone. And the file processor's ffprobe, observed from outside
 * through /proc while it runs.
 */
import { existsSync } from 'node:fs'
import { chmod, mkdir, readdir, readFile, readlink, writeFile } from 'node:fs/promises'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import t from 'tap'
import { eventually } from '../harness/eventually.js'
import { resolveTool } from '../../api/executors/tool-paths.js'
import { makeClip, serveFiles } from '../harness/media.js'
import { scratchDir } from '../harness/scratch.js'
import { Client, serviceEnvironment, startService } from './service.js'

const UNPOLICED = 'dist/test/e2e/unpoliced-service.js'

t.test('with the ffmpeg policy off, a command still sees nothing outside its work dir and has no network', async (t) => {
  const dir = await scratchDir(t)
  const environment = await serviceEnvironment(t, { LOG_LEVEL: 'info' })
  const [service, clip] = await Promise.all([startService(t, environment, UNPOLICED), makeClip(join(dir, 'clip.mp4'), { seconds: 1 })])
  // The start-up line may follow the banner that startService waits for.
  await eventually('the start-up line', () => service.log().includes('ffkube started'))
  t.match(service.log(), /"msg":"ffkube started"/)
  t.match(service.log(), /"sandbox":"bwrap"/, 'the service says at start that its tools run in bubblewrap')
  t.notMatch(service.log(), /SANDBOX/, 'and gives no warning about it')
  const media = await serveFiles(t, [clip])
  const api = new Client(service)
  const { dataDir } = environment
  // Beside the runner's storage credentials, and in another command's work dir.
  const planted = { runner: join(dataDir, 'runner', 'planted.txt'), work: join(dataDir, 'work', 'another-command-1', 'planted.txt') }
  for (const path of Object.values(planted)) {
    await mkdir(join(path, '..'), { recursive: true })
    await writeFile(path, 'the bytes of another tenant\n')
  }
  const run = async (command: string) => {
    const { command_id } = await api.post('/run-ffmpeg-command', {
      input_files: { in_v: media.url(clip) },
      output_files: { out_x: 'x.bin' },
      ffmpeg_command: command,
    })
    return api.waitForCommand(command_id)
  }

  t.test('the policy is really off: an absolute path, refused by the policy, reaches ffmpeg', async (t) => {
    // /proc/self/cwd is ffmpeg's work dir: the one place an absolute path may lead in the sandbox.
    const done = await run('ffmpeg -i /proc/self/cwd/inputs/in_v.mp4 -c copy -f mp4 {{out_x}}')
    t.equal(done.status, 'SUCCESS', JSON.stringify(done))
  })

  const reads: Array<[string, string]> = [
    ['a file planted next to s3-credentials.json', planted.runner],
    ['s3-credentials.json itself', join(dataDir, 'runner', 's3-credentials.json')],
    ["a file in another command's work dir", planted.work],
    ["the service's own environment", `/proc/${service.child.pid}/environ`],
  ]
  t.ok(existsSync(join(dataDir, 'runner', 's3-credentials.json')), 'the credentials file exists on the host')
  // `-f u8` reads any bytes as raw audio (the build has no `data` demuxer), so a refusal is the sandbox's.
  t.test('the raw read itself works: ffmpeg copies a file it can see byte for byte', async (t) => {
    const done = await run('ffmpeg -f u8 -i /proc/self/cwd/inputs/in_v.mp4 -map 0 -c copy -f u8 {{out_x}}')
    t.equal(done.status, 'SUCCESS', JSON.stringify(done))
  })
  for (const [name, path] of reads) {
    t.test(`ffmpeg cannot read ${name}`, async (t) => {
      const done = await run(`ffmpeg -f u8 -i ${path} -map 0 -c copy -f u8 {{out_x}}`)
      t.match(done, { status: 'FAILED', error_status: 'FFMPEG_FAILED' })
      t.match(done.error_message, /No such file or directory/)
    })
  }

  t.test('ffmpeg cannot write outside its work dir', async (t) => {
    const target = join(dataDir, 'runner', 'written.bin')
    const done = await run(`ffmpeg -f u8 -i {{in_v}} -map 0 -c copy -f u8 ${target} -map 0 -c copy -f u8 {{out_x}}`)
    t.equal(done.status, 'FAILED')
    t.notOk(existsSync(target), 'nothing appeared beside the credentials')
  })

  t.test('ffmpeg opens no connection, not even to loopback', async (t) => {
    let connections = 0
    const listener = createServer((_req, res) => res.end())
    listener.on('connection', () => (connections += 1))
    await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve))
    t.teardown(() => new Promise<void>((resolve) => listener.close(() => resolve())))
    const url = `http://127.0.0.1:${(listener.address() as AddressInfo).port}/clip.mp4`
    const done = await run(`ffmpeg -i ${url} -c copy -f mp4 {{out_x}}`)
    t.match(done, { status: 'FAILED', error_status: 'FFMPEG_FAILED' })
    // ffmpeg exited before the runner reported, and the report came back through NATS and MongoDB: a connection would be counted by now.
    t.equal(connections, 0, 'the listener saw no connection')
  })
})

/** Host pids whose argv is `sh <script> …`. */
async function shellsRunning(script: string): Promise<number[]> {
  const pids: number[] = []
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    const argv = (await readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '')).split('\0')
    if (/(^|\/)sh$/.test(argv[0] ?? '') && argv[1] === script) pids.push(Number(entry))
  }
  return pids
}

t.test("the file processor's ffprobe runs in the sandbox, away from the service's files and network", async (t) => {
  const dir = await scratchDir(t)
  // Stands in for ffprobe until the test has looked at it from outside, then is the real one.
  const wrapper = join(dir, 'ffprobe')
  await writeFile(wrapper, `#!/bin/sh\nwhile [ ! -e release ]; do sleep 0.05; done\nexec ${resolveTool('ffprobe')} "$@"\n`)
  await chmod(wrapper, 0o755)
  const environment = await serviceEnvironment(t, { FFPROBE_PATH: wrapper })
  const [service, clip] = await Promise.all([startService(t, environment), makeClip(join(dir, 'clip.mp4'), { seconds: 1, width: 320, height: 240 })])
  const media = await serveFiles(t, [clip])
  const api = new Client(service)
  const { file_id } = await api.post('/files/store-file', { file_url: media.url(clip) })

  const pids = await eventually('the jailed ffprobe running', async () => {
    const running = await shellsRunning(wrapper)
    return running.length > 0 ? running : null
  })
  t.equal(pids.length, 1)
  const pid = pids[0] as number
  for (const ns of ['mnt', 'net', 'pid', 'user', 'ipc']) {
    t.not(await readlink(`/proc/${pid}/ns/${ns}`), await readlink(`/proc/${service.child.pid}/ns/${ns}`), `its ${ns} namespace is not the service's`)
  }
  t.match(await readFile(`/proc/${pid}/status`, 'utf8'), /CapEff:\s+0+\n/, 'it holds no capability')
  // Its own root, as it sees it: the file's folder is there, the data dir's secrets are not.
  const folder = join(environment.dataDir, 'file-fetch', file_id)
  t.ok(existsSync(`/proc/${pid}/root${folder}/clip.mp4`), 'it sees the file it probes')
  t.notOk(existsSync(`/proc/${pid}/root${join(environment.dataDir, 'runner')}`), 'it does not see the runner credentials folder')
  t.same(await readdir(`/proc/${pid}/root${environment.dataDir}`), ['file-fetch'], 'of the data dir it sees its own folder only')
  t.notOk(existsSync(`/proc/${pid}/root/etc/passwd`), 'it does not see the host\'s /etc')

  await writeFile(join(folder, 'release'), '')
  const stored = await api.waitForFile(file_id)
  t.match(stored, { status: 'STORED', width: 320, height: 240 }, 'the jailed ffprobe still probes')
})
