/**
 * Watching a command through HTTP in local mode: its event stream (SSE),
 * progress in the poll response, and its log. The service runs with one
 * runner slot, so a second command waits QUEUED while the first runs; the
 * slow jobs use ffmpeg's `-re` (read the input at its own speed), which the
 * argument policy refuses, hence the test-only entry point without it.
 */
import { spawn } from 'node:child_process'
import { join } from 'node:path'
import t from 'tap'
import { eventually } from '../harness/eventually.js'
import { makeClip, serveFiles } from '../harness/media.js'
import { scratchDir } from '../harness/scratch.js'
import { openEventStream } from '../harness/sse.js'
import { Client, serviceEnvironment, startService, type ServiceEnvironment } from './service.js'

const UNPOLICED = 'dist/test/e2e/unpoliced-service.js'

async function createAccount(environment: ServiceEnvironment): Promise<{ api_key: string }> {
  const child = spawn(process.execPath, ['dist/api/admin/cli.js', 'create-account', '--plan', 'business'], { env: environment.env, stdio: ['ignore', 'pipe', 'inherit'] })
  let out = ''
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()))
  const code = await new Promise((resolve) => child.once('exit', resolve))
  if (code !== 0) throw new Error(`create-account exited ${String(code)}`)
  return JSON.parse(out) as { api_key: string }
}

/** A gauge of the service's /metrics. */
async function gauge(baseUrl: string, name: string): Promise<number> {
  const text = await (await fetch(`${baseUrl}/metrics`)).text()
  const line = text.split('\n').find((l) => l.startsWith(`${name} `))
  return line ? Number(line.split(' ')[1]) : NaN
}

const RANK: Record<string, number> = { QUEUED: 0, PROCESSING: 1, SUCCESS: 2, FAILED: 2 }

t.test('a command can be watched through HTTP while it runs, in local mode', async (t) => {
  const dir = await scratchDir(t)
  const environment = await serviceEnvironment(t, { LOCAL_RUNNER_CONCURRENCY: '1' })
  const [service, clip, short] = await Promise.all([
    startService(t, environment, UNPOLICED),
    makeClip(join(dir, 'ten.mp4'), { seconds: 10, width: 320, height: 180 }),
    makeClip(join(dir, 'short.mp4'), { seconds: 1, width: 160, height: 90 }),
  ])
  const media = await serveFiles(t, [clip, short])
  const api = new Client(service)
  const key = { 'x-api-key': service.apiKey }
  const eventsUrl = (id: string) => `${service.baseUrl}/api/v1/commands/${id}/events`
  const slowJob = (name: string) => ({
    input_files: { in_video: media.url(clip) },
    output_files: { out_video: `${name}.mp4` },
    ffmpeg_command: 'ffmpeg -re -i {{in_video}} -c:v libx264 -preset ultrafast -c:a copy {{out_video}}',
  })

  // The first command holds the only runner slot for ~10 s; the second, submitted once the first
  // runs (the dispatcher promises no order between two waiting commands), waits QUEUED behind it.
  const first = (await api.post('/run-ffmpeg-command', slowJob('first'))).command_id as string
  await eventually('the first command to run', async () => (await api.request('GET', `/commands/${first}`)).body.status === 'PROCESSING')
  const second = (await api.post('/run-ffmpeg-command', slowJob('second'))).command_id as string

  t.test('logs while running hold what ffmpeg wrote so far, paths rewritten to aliases', async (t) => {
    const running = await eventually('the first command to log its input', async () => {
      const { status, body } = await api.request('GET', `/commands/${first}/logs`)
      return status === 200 && body.status === 'PROCESSING' && body.log.includes('Input #0') ? body : null
    })
    t.match(running, { command_id: first, status: 'PROCESSING', truncated: false })
    t.match(running.log, /==> ffmpeg\n/, 'the step is labelled')
    t.match(running.log, /from 'in_video'/, 'the input is named by its alias')
    t.notOk(running.log.includes(environment.dataDir), 'no absolute path of ours')
    t.notOk(running.log.includes('inputs/'), 'no work-dir path of ours')
  })

  t.test('the event stream runs from QUEUED to SUCCESS with progress between, and ends with the state GET returns', async (t) => {
    // A first connection that goes away after its first event: the stream cleans up after it.
    const early = await openEventStream(eventsUrl(second), key)
    t.equal(early.status, 200)
    t.match(early.contentType, /^text\/event-stream/)
    const queued = await early.next()
    t.equal(queued.data.status, 'QUEUED', 'waiting behind the first command')
    t.same([queued.data.progress, queued.data.processing_stage], [null, null])
    early.abort()
    await eventually('the stream and its read loop to be gone', async () => (await gauge(service.baseUrl, 'ffkube_command_event_streams')) === 0 && (await gauge(service.baseUrl, 'ffkube_command_watch_loops')) === 0)

    // Reconnecting as EventSource does: Last-Event-ID, and only newer states come.
    const stream = await openEventStream(eventsUrl(second), { ...key, 'last-event-id': queued.id as string })
    const events = await stream.done
    t.ok(events.length >= 3, `${events.length} events`)
    t.ok(events.every((e) => Number(e.id) > Number(queued.id)), 'every event is newer than Last-Event-ID')
    const ids = events.map((e) => Number(e.id))
    t.same(ids, [...ids].sort((a, b) => a - b), 'ids only grow')
    const ranks = events.map((e) => RANK[e.data.status as string] as number)
    t.same(ranks, [...ranks].sort((a, b) => a - b), 'statuses only move forward')
    const between = events.filter((e) => e.data.status === 'PROCESSING' && e.data.progress > 1 && e.data.progress < 99)
    t.ok(between.length >= 1, `progress events: ${events.map((e) => `${e.data.status}:${e.data.progress}:${e.data.processing_stage}`).join(' ')}`)
    t.ok(between.every((e) => typeof e.data.processing_stage === 'string'), 'a stage with every PROCESSING event')
    const last = events.at(-1)!
    t.match(last.data, { status: 'SUCCESS', progress: 100, processing_stage: null })
    const get = await fetch(`${service.baseUrl}/api/v1/commands/${second}`, { headers: key })
    t.equal(last.raw, await get.text(), 'the final event is GET, byte for byte')

    t.test('after the end, a client gets the final state as one event and the end', async (t) => {
      const after = await openEventStream(eventsUrl(second), key)
      const only = await after.done
      t.equal(only.length, 1)
      t.equal(only[0]!.raw, last.raw)
      t.equal(only[0]!.id, last.id)
    })

    t.test('reconnecting with the terminal event id is 204: nothing more will come', async (t) => {
      const response = await fetch(eventsUrl(second), { headers: { ...key, 'last-event-id': last.id as string } })
      t.equal(response.status, 204)
    })
  })

  t.test('the log of a FAILED command holds ffmpeg error line, and no absolute path of ours', async (t) => {
    const { command_id } = await api.post('/run-ffmpeg-command', {
      input_files: { in_video: media.url(short) },
      output_files: { out_video: 'broken.mp4' },
      ffmpeg_command: 'ffmpeg -i {{in_video}} -c:v no_such_encoder {{out_video}}',
    })
    const done = await api.waitForCommand(command_id)
    t.equal(done.status, 'FAILED')
    t.same([done.progress, done.processing_stage], [null, null])
    const logs = await eventually('the log to hold the error line', async () => {
      const { body } = await api.request('GET', `/commands/${command_id}/logs`)
      return body.log.includes('no_such_encoder') ? body : null
    })
    t.match(logs, { command_id, status: 'FAILED', truncated: false })
    t.match(logs.log, /Unknown encoder 'no_such_encoder'/)
    t.notOk(logs.log.includes(environment.dataDir), 'no absolute path of ours')
    t.notOk(/(^|[\s'"])\/(tmp|home|root|work)\//m.test(logs.log), 'no absolute path at all')
  })

  t.test("the log of a yt-dlp batch labels each URL's step and holds yt-dlp's error for the one that failed", async (t) => {
    const missing = media.url(short).replace('short.mp4', 'missing.mp4')
    const { command_id } = await api.post('/ytdlp-download', { input_urls: { in_good: media.url(short), in_bad: missing } })
    const done = await api.waitForCommand(command_id)
    t.equal(done.status, 'SUCCESS', JSON.stringify(done))
    t.ok(done.failed_files?.in_bad, 'in_bad failed')
    const logs = await eventually('the log to hold both steps', async () => {
      const { body } = await api.request('GET', `/commands/${command_id}/logs`)
      return body.log.includes('==> yt-dlp: in_bad') ? body : null
    })
    t.match(logs.log, /==> yt-dlp: in_good\n/)
    t.match(logs.log, /==> yt-dlp: in_bad\n[^]*ERROR/)
    t.notOk(logs.log.includes(environment.dataDir), 'no absolute path of ours')
  })

  t.test("another account's command is 404 for its events and its logs", async (t) => {
    const other = { 'x-api-key': (await createAccount(environment)).api_key }
    for (const path of ['events', 'logs']) {
      const response = await fetch(`${service.baseUrl}/api/v1/commands/${first}/${path}`, { headers: other })
      t.equal(response.status, 404, path)
      t.match(await response.json(), { error: 'NOT_FOUND' })
    }
  })
})
