// Counts the source files one command crosses in local mode, by running it:
// starts `node dist/api/main.js` (every role, EXECUTOR=local, a fresh data
// dir) under the inspector, turns on V8's precise coverage once the service is
// ready, sends one run-ffmpeg-command with a webhook_url, polls it to SUCCESS,
// waits for the webhook, and lists the files (dist/*.js → *.ts) in which some
// function ran meanwhile. An idle window measured before names the files that
// run on timers alone (polling loops), and requests of another resource, after,
// those every request runs (authentication, rate limit, body parser, error
// handler): both shown apart.
// The runner's own process is not inspected: docs/architecture/one-command.md
// lists its files.
//
//   npx --no-install tsc -p tsconfig.json && node dist/scripts/one-command-files.js
import { execFileSync, spawn } from 'node:child_process'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { homedir, tmpdir } from 'node:os'
import { join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { MongoClient } from 'mongodb'

// Run from dist/scripts/: the checkout is two levels up.
const root = resolve(fileURLToPath(new URL('../..', import.meta.url)))
const cache = process.env.FFKUBE_CACHE ?? join(homedir(), '.cache', 'ffkube')
const scratch = mkdtempSync(join(tmpdir(), 'ffkube-one-command-'))
const clip = join(scratch, 'clip.mp4')
execFileSync(join(cache, 'bin', 'ffmpeg'), ['-v', 'error', '-f', 'lavfi', '-i', 'testsrc=size=160x120:rate=10', '-t', '1', '-pix_fmt', 'yuv420p', clip])

// Serves the input clip, and answers the webhook POSTs.
const inputs = createServer((req, res) => {
  if (req.method === 'POST') {
    req.resume()
    req.on('end', () => res.end('ok'))
    return
  }
  res.setHeader('content-type', 'video/mp4')
  res.end(readFileSync(clip))
})
await new Promise<void>((r) => inputs.listen(0, '127.0.0.1', r))
const inputsUrl = `http://127.0.0.1:${(inputs.address() as AddressInfo).port}`

const service = spawn(process.execPath, ['--inspect=127.0.0.1:0', '--enable-source-maps', 'dist/api/main.js'], {
  cwd: root,
  env: { ...process.env, PORT: '0', FFKUBE_DATA_DIR: join(scratch, 'data'), ALLOW_PRIVATE_NETWORKS: '1', LOG_LEVEL: 'warn' },
  stdio: ['ignore', 'pipe', 'pipe'],
})
let out = ''
let err = ''
service.stdout.on('data', (c: Buffer) => (out += c.toString()))
service.stderr.on('data', (c: Buffer) => (err += c.toString()))
async function until<T>(what: string, check: () => T | undefined | Promise<T | undefined>, ms = 180_000): Promise<T> {
  const deadline = Date.now() + ms
  for (;;) {
    const v = await check()
    if (v) return v
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}\n${out}\n${err.slice(-2000)}`)
    await new Promise((r) => setTimeout(r, 100))
  }
}
const inspectorUrl = await until('the inspector', () => /ws:\/\/\S+/.exec(err)?.[0])
const baseUrl = await until('the service', () => /listening on (\S+)/.exec(out)?.[1])
const apiKey = await until('the API key', () => /API key \(business plan\): (\S+)/.exec(out)?.[1])

const ws = new WebSocket(inspectorUrl)
await new Promise((resolveOpen, rejectOpen) => {
  ws.onopen = resolveOpen
  ws.onerror = rejectOpen
})
let nextId = 1
const pending = new Map<number, (result: unknown) => void>()
ws.onmessage = (m: { data: unknown }) => {
  const msg = JSON.parse(String(m.data)) as { id?: number; result?: unknown }
  const answer = msg.id === undefined ? undefined : pending.get(msg.id)
  if (answer) {
    pending.delete(msg.id!)
    answer(msg.result)
  }
}
/** One Chrome DevTools Protocol call on the service's inspector. */
function call<T>(method: string, params: object = {}): Promise<T> {
  const id = nextId++
  return new Promise((r) => {
    pending.set(id, r as (result: unknown) => void)
    ws.send(JSON.stringify({ id, method, params }))
  })
}
interface ScriptCoverage { url: string; functions: Array<{ ranges: Array<{ count: number }> }> }
await call('Profiler.enable')
await call('Profiler.startPreciseCoverage', { callCount: true, detailed: false })

const distUrl = new URL('dist/', new URL(`file://${root}/`)).href
/** Files (relative .ts paths) in which some function ran since the last take; taking resets the counts. */
async function take(): Promise<Set<string>> {
  const { result } = await call<{ result: ScriptCoverage[] }>('Profiler.takePreciseCoverage')
  const files = new Set<string>()
  for (const script of result) {
    if (!script.url.startsWith(distUrl)) continue
    if (!script.functions.some((f) => (f.ranges[0]?.count ?? 0) > 0)) continue
    files.add(relative(join(root, 'dist'), fileURLToPath(script.url)).replace(/\.js$/, '.ts'))
  }
  return files
}

interface Command { command_id: string; status: string }
async function api(method: string, path: string, body?: object): Promise<Command> {
  const headers = { 'x-api-key': apiKey, ...(body ? { 'content-type': 'application/json' } : {}) }
  const res = await fetch(`${baseUrl}/api/v1${path}`, { method, headers, ...(body ? { body: JSON.stringify(body) } : {}) })
  return (await res.json()) as Command
}
// Warm up: one command first, so what runs once per process (lazy imports, first connections) is not counted.
const submit = () => api('POST', '/run-ffmpeg-command', {
  input_files: { in_video: `${inputsUrl}/clip.mp4` },
  output_files: { out_video: 'out.mp4' },
  ffmpeg_command: 'ffmpeg -i {{in_video}} -c:v libx264 -preset ultrafast {{out_video}}',
  webhook_url: `${inputsUrl}/webhook`,
})
const finish = (id: string): Promise<Command> => until(`command ${id}`, async () => {
  const c = await api('GET', `/commands/${id}`)
  return c.status === 'SUCCESS' || c.status === 'FAILED' ? c : undefined
})
// A command is over for this count once its webhook delivery has ended (the deliverer writes it after the POST
// was answered) and its run too (the executor writes it after the runner's work dir is gone); read from the store
// by this script, so no code of the service runs for the check.
const store = new MongoClient(readFileSync(join(scratch, 'data', 'ferretdb', 'ferretdb.uri'), 'utf8').trim())
const db = store.db('ffkube')
const delivered = (commandId: string) =>
  until(`the end of ${commandId}'s webhook delivery and run`, async () => {
    const delivery = await db.collection('webhook_deliveries').findOne({ _id: `whd_${commandId}` as never, outcome: 'delivered' })
    const run = await db.collection('commands').findOne({ _id: commandId as never, run_state: 'ended' })
    return delivery && run ? true : undefined
  })
const warm = await submit()
await finish(warm.command_id)
await delivered(warm.command_id)

// Idle first, with nothing in flight: what runs on timers alone (polling loops), in a window longer than their 1 s polls.
const IDLE_MS = 3_000
await take()
await new Promise((r) => setTimeout(r, IDLE_MS))
const idle = await take()
const started = performance.now()
const { command_id: id } = await submit()
const done = await finish(id)
await delivered(id)
const crossed = await take()
const windowMs = performance.now() - started
// What every authenticated request runs, whatever it asks (the key, the rate limit, the JSON body parser, the
// checks of query values, the route table, the error handler): a path no route serves, a query and a refused
// body on a resource a command never touches (presets), a few times.
for (let i = 0; i < 3; i++) {
  await api('GET', '/no-such-resource')
  await api('GET', '/presets?limit=1')
  await api('POST', '/presets', {})
}
const plainRequest = await take()

ws.close()
await store.close()
service.kill('SIGTERM')
await new Promise((r) => service.once('exit', r))
inputs.close()
rmSync(scratch, { recursive: true, force: true })

const byTimer = [...crossed].filter((f) => idle.has(f)).sort()
const byRequest = [...crossed].filter((f) => !idle.has(f) && plainRequest.has(f)).sort()
const byCommand = [...crossed].filter((f) => !idle.has(f) && !plainRequest.has(f)).sort()
console.log(`command ${id}: ${done.status}, ${Math.round(windowMs)} ms from submit to its webhook delivery's end (after a warm-up command and an idle window of ${IDLE_MS} ms)`)
console.log(`files crossed in the service process: ${crossed.size} (${byCommand.length} only with the command, ${byRequest.length} also for any request, ${byTimer.length} also while idle)`)
// docs/architecture/one-command.md's measure: the service's own files (api/) apart from the shared contracts/.
const inFolder = (files: string[], folder: string) => files.filter((f) => f.startsWith(`${folder}/`)).length
for (const folder of ['api', 'contracts']) {
  console.log(`${folder}/: ${inFolder(byCommand, folder)} only with the command, ${inFolder(byRequest, folder)} also for any request, ${inFolder(byTimer, folder)} also while idle`)
}
console.log(`\nonly with the command (${byCommand.length}):\n  ${byCommand.join('\n  ')}`)
console.log(`\nalso for any request (${byRequest.length}):\n  ${byRequest.join('\n  ')}`)
console.log(`\nalso while idle (${byTimer.length}):\n  ${byTimer.join('\n  ')}`)
