import t from 'tap'
import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { Client, serviceEnvironment, startService } from '../e2e/service.js'
import { makeClip, serveFiles } from '../harness/media.js'
import { eventually } from '../harness/eventually.js'
import { scratchDir, type Teardown } from '../harness/scratch.js'

interface RoleProcess {
  baseUrl: string
  exited: Promise<number | null>
}

/** Starts `script` with `env` and waits for its "ffkube started" log line (pino JSON on stdout). */
async function startRole(t: Teardown, script: string, env: NodeJS.ProcessEnv): Promise<RoleProcess> {
  const child = spawn(process.execPath, [script], { env: { ...env, LOG_LEVEL: 'info' }, stdio: ['ignore', 'pipe', 'pipe'] })
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve))
  t.teardown(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM')
      await exited
    }
  })
  let output = ''
  child.stderr.on('data', (chunk: Buffer) => (output = (output + chunk.toString()).slice(-20_000)))
  const baseUrl = await new Promise<string>((resolve, reject) => {
    let out = ''
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString()
      output = (output + chunk.toString()).slice(-20_000)
      const started = /"msg":"ffkube started"/.test(out) ? /"url":"(http:\/\/[^"]+)"/.exec(out) : null
      if (started) resolve(started[1]!)
    })
    child.once('exit', (code) => reject(new Error(`${script} exited ${code} before it started:\n${output}`)))
  })
  return { baseUrl, exited }
}

t.test('the API, the worker and the webhook deliverer run as separate processes, one role each', async (t) => {
  const dir = await scratchDir(t, 'ffkube-roles-')
  const clip = await makeClip(join(dir, 'clip.mp4'), { seconds: 1 })
  const files = await serveFiles(t, [clip])
  const environment = await serviceEnvironment(t)

  const api = await startService(t, { ...environment, env: { ...environment.env, FFKUBE_ROLES: 'api' } })
  const client = new Client(api)
  const { command_id } = await client.post('/run-ffmpeg-command', {
    input_files: { in_video: files.url('clip.mp4') },
    output_files: { out_audio: 'audio.m4a' },
    ffmpeg_command: 'ffmpeg -i {{in_video}} -vn -c:a copy {{out_audio}}',
  })
  const worker = await startRole(t, 'dist/api/main.js', { ...environment.env, FFKUBE_ROLES: 'worker' })
  t.equal((await fetch(`${worker.baseUrl}/healthz`)).status, 200, 'the worker answers /healthz')
  const ready = await fetch(`${worker.baseUrl}/readyz`)
  t.equal(ready.status, 200, 'and /readyz')
  t.same((await ready.json()) as unknown, { status: 'ready', checks: { mongodb: 'ok', nats: 'ok', storage: 'ok' } })
  t.equal((await fetch(`${worker.baseUrl}/api/v1/commands/${command_id}`, { headers: { 'x-api-key': api.apiKey } })).status, 404, 'but serves no API')

  const done = await client.waitForCommand(command_id)
  t.equal(done.status, 'SUCCESS', 'the worker process dispatched, ran and projected the command')
  t.equal(done.output_files.out_audio.status, 'STORED')

  const metricsOf = async (baseUrl: string) => {
    const res = await fetch(`${baseUrl}/metrics`)
    t.match(res.headers.get('content-type'), /^text\/plain/)
    return res.text()
  }
  // The projector counts an event after its write and ack, so GET can show SUCCESS a moment before the count does.
  const workerMetrics = await eventually('the worker counts the SUCCESS it applied', async () => {
    const scraped = await metricsOf(worker.baseUrl)
    return /^ffkube_status_events_applied_total\{type="SUCCESS"\} 1$/m.test(scraped) ? scraped : null
  })
  // One hand-off per command: the worker's being the one means the API process made none.
  t.match(workerMetrics, /^ffkube_dispatcher_handoffs_total\{outcome="dispatched"\} 1$/m, 'the worker, not the API, handed the command off')
  t.match(workerMetrics, /^ffkube_status_events_applied_total\{type="SUCCESS"\} 1$/m, 'and the events it applied')
  t.match(workerMetrics, /^ffkube_commands_finished_total\{status="SUCCESS"\} 1$/m)
  t.match(workerMetrics, /^ffkube_dispatch_wait_seconds_count 1$/m, 'the wait from acceptance to hand-off, once per command')
  t.match(workerMetrics, /^# TYPE ffkube_dispatch_queue_depth gauge$/m, 'and the queue depth per plan')
  t.match(workerMetrics, /^ffkube_process_resident_memory_bytes \d+/m, 'with node\'s process metrics')
  // The sweep's first round runs when the worker starts; nothing has expired, so it deletes nothing.
  const swept = await eventually('the retention sweep\'s first round', async () => /^ffkube_retention_sweeps_total [1-9]/m.test(await metricsOf(worker.baseUrl)) || null)
  t.ok(swept, 'the worker runs the retention sweep')
  t.match(await metricsOf(worker.baseUrl), /^ffkube_files_expired_total 0$/m, 'which found nothing expired')
  const apiMetrics = await metricsOf(api.baseUrl)
  t.match(apiMetrics, /^ffkube_http_requests_total\{method="POST",route="\/api\/v1\/run-ffmpeg-command",status_code="200"\} 1$/m, 'the API counts requests by route')
  t.match(apiMetrics, /route="\/api\/v1\/commands\/:commandId",status_code="200"/, 'by the route pattern')
  t.notOk(apiMetrics.includes(command_id), 'never by the raw URL, so ids do not become series')
  t.notMatch(apiMetrics, /^ffkube_dispatcher_handoffs_total\{[^}]*\} [1-9]/m, 'the api role runs no dispatcher')
  t.match(apiMetrics, /^ffkube_retention_sweeps_total 0$/m, 'nor the retention sweep')

  const webhooks = await startRole(t, 'dist/api/main.js', { ...environment.env, FFKUBE_ROLES: 'webhooks', ENCRYPTION_KEYS: `k1:${Buffer.alloc(32, 1).toString('base64')}` })
  const webhooksReady = await fetch(`${webhooks.baseUrl}/readyz`)
  t.equal(webhooksReady.status, 200, 'the webhook deliverer answers /readyz')
  t.same((await webhooksReady.json()) as unknown, { status: 'ready', checks: { mongodb: 'ok', nats: 'ok', storage: 'ok' } }, 'the same three checks as every process (DESIGN.md)')
  t.equal((await fetch(`${webhooks.baseUrl}/api/v1/commands/${command_id}`, { headers: { 'x-api-key': api.apiKey } })).status, 404, 'and serves no API')
})

t.test('outside local mode, and in a webhook deliverer alone, nothing is started locally: missing servers and keys are named', async (t) => {
  const environment = await serviceEnvironment(t)
  const withoutNats: NodeJS.ProcessEnv = { ...environment.env }
  delete withoutNats.NATS_URL
  const cases = [
    { name: 'every role with EXECUTOR=kubernetes', env: { ...withoutNats, EXECUTOR: 'kubernetes' } },
    { name: 'the webhook deliverer alone with EXECUTOR=local', env: { ...withoutNats, EXECUTOR: 'local', FFKUBE_ROLES: 'webhooks' } },
  ]
  for (const { name, env } of cases) {
    const child = spawn(process.execPath, ['dist/api/main.js'], { env, stdio: ['ignore', 'pipe', 'pipe'] })
    let stderr = ''
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve))
    t.equal(code, 2, `${name}: exits 2`)
    t.match(stderr, /^ffkube: NATS_URL, ENCRYPTION_KEYS must be set/, `${name}: names each variable missing, and only those`)
  }
})
