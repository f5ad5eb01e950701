import { readFile, stat } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { Client, serviceEnvironment, startService } from '../e2e/service.js'
import { eventually } from '../harness/eventually.js'
import { makeClip, serveFiles } from '../harness/media.js'
import { scratchDir } from '../harness/scratch.js'
import { CLI, cliEnvironment, REPO, runCli, startCli } from './cli-process.js'
import { execFile, spawn } from 'node:child_process'
import { promisify } from 'node:util'

const run = promisify(execFile)
const ID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/

t.test('every ffkube subcommand against the service as npm start runs it', async (t) => {
  const dir = await scratchDir(t)
  const environment = await serviceEnvironment(t)
  const [service, clip] = await Promise.all([startService(t, environment), makeClip(join(dir, 'clip.mp4'), { seconds: 1, width: 320, height: 240 })])
  const media = await serveFiles(t, [clip])
  const api = new Client(service)
  const user = await cliEnvironment(join(dir, 'user'), { FFKUBE_URL: service.baseUrl, FFKUBE_API_KEY: service.apiKey })
  const ffkube = (...args: string[]) => runCli(user, args)

  // One finished command for status, list and logs.
  const { command_id: done } = await api.post('/run-ffmpeg-command', {
    input_files: { in_video: media.url(clip) },
    output_files: { out_jpg: 'frame.jpg' },
    ffmpeg_command: 'ffmpeg -i {{in_video}} -frames:v 1 {{out_jpg}}',
  })
  await api.waitForCommand(done)

  t.test('npx ffkube runs the package bin from the repository', async (t) => {
    // npx installs the checkout into its cache (~/.npm/_npx) once per path and keeps the bin path it
    // saw then; an npm cache of this test's own makes the run that of a user's first npx, whatever
    // an earlier checkout at the same path left there.
    const env = { ...process.env, FFKUBE_URL: '', npm_config_cache: join(dir, '.npm') }
    const { stdout } = await run('npx', ['--no-install', 'ffkube', '--help'], { cwd: REPO, env })
    t.match(stdout, /Usage: ffkube/)
    t.match(stdout, /Exit codes: 0 success; 1 the command ended FAILED; 2 usage/)
  })

  t.test('status prints the command and its outputs; --json prints the API answer', async (t) => {
    const plain = await ffkube('status', done)
    t.equal(plain.code, 0, plain.stderr)
    t.match(plain.stdout, new RegExp(`^command\\s+${done}$`, 'm'))
    t.match(plain.stdout, /^status\s+SUCCESS$/m)
    t.match(plain.stdout, /^out_jpg\s+frame\.jpg\s+STORED\s+320x240 mjpeg/m)
    const json = await ffkube('status', '--json', done)
    t.match(JSON.parse(json.stdout), { command_id: done, status: 'SUCCESS', output_files: { out_jpg: { filename: 'frame.jpg' } } })
    const missing = await ffkube('status', '0b0e4f6c-0000-4000-8000-000000000000')
    t.equal(missing.code, 3)
    t.match(missing.stderr, /404 NOT_FOUND/)
  })

  t.test('list shows commands newest first, filtered by status', async (t) => {
    const result = await ffkube('list', '--status', 'SUCCESS', '--limit', '10')
    t.equal(result.code, 0, result.stderr)
    t.match(result.stdout, /^COMMAND\s+STATE\s+TYPE\s+PROGRESS\s+ERROR$/m)
    t.match(result.stdout, new RegExp(`^${done}\\s+SUCCESS\\s+FFMPEG_COMMAND\\s+100%$`, 'm'))
    const bad = await ffkube('list', '--limit', '1000')
    t.equal(bad.code, 2)
    t.match(bad.stderr, /--limit takes a whole number from 1 to 100/)
  })

  t.test('logs prints what ffmpeg wrote; --tail the last lines', async (t) => {
    // The log travels on its own path (NATS, the log projector) and may trail SUCCESS.
    await eventually('the log to hold the input line', async () => /Input #0, mov,mp4/.test((await api.request('GET', `/commands/${done}/logs`)).body.log))
    // --tail first: the log only grows at its end, so its last lines are in any later read.
    const last = await ffkube('logs', '--tail', '2', done)
    t.equal(last.code, 0, last.stderr)
    t.equal(last.stdout.trimEnd().split('\n').length, 2)
    const all = await ffkube('logs', done)
    t.equal(all.code, 0, all.stderr)
    t.match(all.stdout, /^==> ffmpeg$/m)
    t.match(all.stdout, /Input #0, mov,mp4/)
    t.ok(all.stdout.includes(last.stdout.trimEnd()), 'the tail is the end of the log')
  })

  t.test('cancel stops a running command; wait then exits 1 with CANCELLED', async (t) => {
    const submitted = await ffkube('run', '--detach', '--in', `in_v=${media.url(clip)}`, 'ffmpeg -stream_loop -1 -i {{in_v}} -f null -')
    t.equal(submitted.code, 0, submitted.stderr)
    const commandId = submitted.stdout.trim()
    t.match(commandId, ID)
    const cancelled = await ffkube('cancel', commandId)
    t.equal(cancelled.code, 0, cancelled.stderr)
    t.match(cancelled.stdout, `${commandId} cancelled`)
    const waited = await ffkube('wait', commandId)
    t.equal(waited.code, 1)
    t.match(waited.stderr, new RegExp(`command ${commandId} FAILED: CANCELLED`))
  })

  t.test('Ctrl-C stops following and leaves the command running (exit 130)', async (t) => {
    const following = startCli(user, ['run', '--in', `in_v=${media.url(clip)}`, 'ffmpeg -stream_loop -1 -i {{in_v}} -f null -'])
    const said = await following.waitForStderr(/^\S+ QUEUED$/m)
    const commandId = ID.exec(said)![0]
    following.child.kill('SIGINT')
    const result = await following.done
    t.equal(result.code, 130)
    t.match(result.stderr, `interrupted; command ${commandId} keeps running`)
    t.not((await api.request('GET', `/commands/${commandId}`)).body.status, 'FAILED', 'the command was not cancelled')
    t.equal((await ffkube('cancel', commandId)).code, 0)
  })

  t.test('upload stores a local file and prints its id, a URL that works as an input, and its expiry', async (t) => {
    const result = await runCli({ ...user, cwd: dir }, ['upload', 'clip.mp4'])
    t.equal(result.code, 0, result.stderr)
    const [fileId, url, expires, at] = result.stdout.trim().split(/\s+/)
    t.match(fileId, /^file_/)
    t.match(url, /^http/)
    const file = (await api.request('GET', `/files/${fileId}`)).body
    t.match(file, { status: 'STORED', service_store_type: 'UPLOAD', width: 320 })
    t.same([expires, at], ['expires', file.expires_at], 'and when retention deletes it')
    const missing = await ffkube('upload', 'nothing-here.mp4')
    t.equal(missing.code, 2)
  })

  t.test('presets: list, show, and run one with its inputs, downloading its output', async (t) => {
    const preset = await api.request('POST', '/presets', {
      name: 'First frame',
      input_file_keys: ['in_video'],
      output_file_definitions: { out_frame: 'first.jpg' },
      ffmpeg_command: 'ffmpeg -i {{in_video}} -frames:v 1 {{out_frame}}',
    })
    t.equal(preset.status, 201)
    const presetId = preset.body.preset_id as string
    const list = await ffkube('presets', 'list')
    t.equal(list.code, 0, list.stderr)
    t.match(list.stdout, new RegExp(`^${presetId}\\s+First frame\\s+yours\\s+in_video\\s+out_frame$`, 'm'))
    const show = await ffkube('presets', 'show', presetId)
    t.match(show.stdout, /^command\s+ffmpeg -i \{\{in_video\}\} -frames:v 1 \{\{out_frame\}\}$/m)
    const ran = await ffkube('presets', 'run', presetId, '--in', `in_video=${media.url(clip)}`)
    t.equal(ran.code, 0, ran.stderr)
    t.match(ran.stdout, /^out_frame {2}\S+first\.jpg {2}320x240 mjpeg/m)
    t.ok((await stat(join(user.cwd, 'first.jpg'))).size > 0)
  })

  t.test('webhook set, get and delete', async (t) => {
    const set = await ffkube('webhook', 'set', 'https://hooks.example.com/ffkube', '--secret', 's3cret')
    t.equal(set.code, 0, set.stderr)
    t.match(set.stdout, 'webhook set: https://hooks.example.com/ffkube (signed)')
    const get = await ffkube('webhook', 'get')
    t.match(get.stdout, /^url\s+https:\/\/hooks\.example\.com\/ffkube$/m)
    t.match(get.stdout, /^active\s+yes$/m)
    t.match(get.stdout, /^signed\s+yes/m)
    const removed = await ffkube('webhook', 'delete')
    t.equal(removed.code, 0, removed.stderr)
    t.match((await ffkube('webhook', 'get', '--json')).stdout, /"is_active": false/)
    const invalid = await ffkube('webhook', 'set', 'not a url')
    t.equal(invalid.code, 3)
    t.match(invalid.stderr, /422 VALIDATION_ERROR: .*url/)
  })

  t.test('config set writes a file only the user reads; the environment wins over it', async (t) => {
    const bare = await cliEnvironment(join(dir, 'configured'))
    const unset = await runCli(bare, ['list'])
    t.equal(unset.code, 2)
    t.match(unset.stderr, /no service URL: set FFKUBE_URL/)
    t.equal((await runCli(bare, ['config', 'set', 'url', service.baseUrl])).code, 0)
    t.equal((await runCli(bare, ['config', 'set', 'api-key', '-'], { stdin: `${service.apiKey}\n` })).code, 0)
    const path = join(bare.env.XDG_CONFIG_HOME!, 'ffkube', 'config.json')
    t.same(JSON.parse(await readFile(path, 'utf8')), { url: service.baseUrl, api_key: service.apiKey })
    t.equal((await stat(path)).mode & 0o777, 0o600)
    const listed = await runCli(bare, ['list'])
    t.equal(listed.code, 0, listed.stderr)
    t.match(listed.stdout, done)
    const shown = await runCli(bare, ['config', 'show'])
    t.match(shown.stdout, /^api-key\s+ffsk_\w{4}…\w{4}\s+\[config file\]$/m)
    t.notMatch(shown.stdout, service.apiKey, 'the key is masked')
    const overridden = await runCli(bare, ['list'], { env: { FFKUBE_API_KEY: `ffsk_${'1'.repeat(64)}` } })
    t.equal(overridden.code, 3, 'FFKUBE_API_KEY replaces the file key')
  })

  t.test('a reader that has gone (ffkube … | head) ends the CLI quietly, not with a stack trace', async (t) => {
    const child = spawn(process.execPath, [CLI, '--help'], { cwd: user.cwd, env: user.env, stdio: ['ignore', 'pipe', 'pipe'] })
    // Closed before the CLI has loaded, so its first write meets EPIPE.
    child.stdout.destroy()
    let stderr = ''
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve))
    t.equal(code, 0)
    t.notMatch(stderr, /EPIPE|Error/, 'nothing on stderr about the pipe')
  })

  t.test('usage prints the storage against the quota and the account\'s days with their totals; --json the API answer', async (t) => {
    const result = await ffkube('usage', '--days', '3')
    t.equal(result.code, 0, result.stderr)
    const { storage, by_day, totals } = (await api.request('GET', '/usage?days=3')).body
    t.ok(storage.stored_bytes > 0, 'the earlier outputs and upload are stored')
    t.match(result.stdout, new RegExp(`^stored now: ${storage.stored_bytes} \\(.+\\) bytes of a 1099511627776 \\(1\\.0 TiB\\) quota, 0\\.0% used$`, 'm'))
    t.match(result.stdout, /^DAY \(UTC\)\s+COMMANDS\s+SUCCEEDED\s+FAILED\s+FFMPEG_S\s+TOTAL_S\s+FILES\s+BYTES$/m)
    const today = by_day.at(-1)
    t.match(result.stdout, new RegExp(`^${today.date}\\s+${today.commands}\\s+${today.commands_succeeded}\\s+${today.commands_failed}\\s+[0-9.]+\\s+[0-9.]+\\s+${today.files_stored}\\s+${today.bytes_stored}$`, 'm'))
    t.match(result.stdout, new RegExp(`^total\\s+${totals.commands}\\s+${totals.commands_succeeded}\\s+${totals.commands_failed}\\s`, 'm'))
    t.equal(result.stdout.trim().split('\n').length, 1 + 1 + 1 + 3 + 1, 'the storage line, a blank line, the header, three days and the totals')
    const json = await ffkube('usage', '--json')
    t.match(JSON.parse(json.stdout), { days: 30, storage: { stored_bytes: storage.stored_bytes, quota_bytes: 1024 ** 4 } })
    const bad = await ffkube('usage', '--days', '400')
    t.equal(bad.code, 2, bad.stderr)
    t.match(bad.stderr, /--days/)
  })

  t.test('usage errors exit 2 before anything is sent', async (t) => {
    for (const args of [['run', 'ffmpeg -i x y', '--in', 'novalue'], ['frobnicate'], ['run', '--in', 'in_a=https://x', 'ffmpeg', '-i', 'x'], ['status']]) {
      const result = await ffkube(...args)
      t.equal(result.code, 2, `${args.join(' ')}: ${result.stderr}`)
    }
  })
})
