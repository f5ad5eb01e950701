/**
 * The two limits on event streams (GET /commands/:id/events), over real
 * sockets: an account's cap of open streams on one API process, and a
 * stream's lifetime, after which its client resumes with Last-Event-ID. No
 * executor runs beside this API, so a command stays QUEUED until the test
 * writes its record as the status projector would.
 */
import t from 'tap'
import { RECONNECT_HINT_MS } from '../../api/commands/event-stream.js'
import { STREAM_SLOT_RETRY_AFTER_SECONDS } from '../../api/commands/stream-slots.js'
import type { CommandDocument } from '../../api/commands/command-document.js'
import { createLogger } from '../../api/logger.js'
import type { EventStreamRecorder } from '../../api/metrics/service-metrics.js'
import { buildServer } from '../../api/server.js'
import { startApi } from '../harness/api.js'
import { eventually } from '../harness/eventually.js'
import { openEventStream, type SseStream } from '../harness/sse.js'

const UNLIMITED = { free: 0, trial: 0, growth: 0, business: 0 }

t.test('event stream limits', async (t) => {
  // The route's own count of open streams, as /metrics reads it: how a test sees that the server noticed a close.
  let streams = () => ({ open: 0, watchedCommands: 0 })
  const metrics: EventStreamRecorder = { watchEventStreams: (source) => void (streams = source) }
  const api = await startApi(t, { eventStreamsPerAccount: 2, eventStreamMetrics: metrics })
  const baseUrl = await api.app.listen({ host: '127.0.0.1', port: 0 })
  const alice = await api.createAccount('business')
  const bob = await api.createAccount('business')

  const opened: SseStream[] = []
  t.teardown(() => opened.forEach((stream) => stream.abort()))
  const eventsUrl = (base: string, commandId: string) => `${base}/api/v1/commands/${commandId}/events`
  const open = async (key: string, commandId: string, headers: Record<string, string> = {}, base = baseUrl) => {
    const stream = await openEventStream(eventsUrl(base, commandId), { 'x-api-key': key, ...headers })
    opened.push(stream)
    return stream
  }
  const submit = async (key: string): Promise<string> => {
    const res = await api.app.inject({
      method: 'POST',
      url: '/api/v1/run-ffmpeg-command',
      headers: { 'x-api-key': key },
      payload: { input_files: { in_video: 'https://example.com/a.mp4' }, output_files: { out_a: 'a.mp4' }, ffmpeg_command: 'ffmpeg -i {{in_video}} {{out_a}}' },
    })
    if (res.statusCode !== 200) throw new Error(`submit: ${res.statusCode} ${res.body}`)
    return res.json().command_id as string
  }
  /** What the status projector does: one write of the record, its revision moving on. */
  const project = async (commandId: string, set: Partial<CommandDocument>) => {
    const doc = await api.app.commands.findForProjection(commandId)
    if (!doc || !(await api.app.commands.writeProjection(doc, set))) throw new Error(`the projection write of ${commandId} was refused`)
  }
  const refused = async (key: string, commandId: string) => {
    const res = await fetch(eventsUrl(baseUrl, commandId), { headers: { 'x-api-key': key, accept: 'text/event-stream' } })
    return { status: res.status, contentType: res.headers.get('content-type'), retryAfter: res.headers.get('retry-after'), body: await res.text() }
  }

  const first = await submit(alice.api_key)
  const held = [await open(alice.api_key, first), await open(alice.api_key, first)]

  t.test("a stream over the account's cap is 429 before any stream byte, naming the limit and how many are open", async (t) => {
    t.same(
      held.map((stream) => stream.status),
      [200, 200],
    )
    await Promise.all(held.map((stream) => stream.next()))
    const over = await refused(alice.api_key, await submit(alice.api_key))
    t.equal(over.status, 429)
    t.match(over.contentType, /^application\/json/, 'an ordinary error answer, not a stream')
    t.equal(over.retryAfter, String(STREAM_SLOT_RETRY_AFTER_SECONDS))
    const body = JSON.parse(over.body) as { error: string; message: string }
    t.same(Object.keys(body).sort(), ['error', 'message'])
    t.equal(body.error, 'RATE_LIMITED')
    t.match(body.message, /event streams/)
    t.match(body.message, /has 2 open/, 'how many the account holds')
    t.match(body.message, /limit is 2/, 'the limit it hit')
  })

  t.test('the cap is per account: another account still gets its streams', async (t) => {
    const stream = await open(bob.api_key, await submit(bob.api_key))
    t.equal(stream.status, 200)
    t.equal((await stream.next()).data.status, 'QUEUED')
    stream.abort()
    await eventually("the server to see bob's stream go", () => streams().open === 2)
  })

  t.test("a finished command's reconnect with its last event id is still 204 at the cap", async (t) => {
    const ended = await submit(alice.api_key)
    await project(ended, { status: 'SUCCESS', completed_at: new Date() })
    const res = await fetch(eventsUrl(baseUrl, ended), { headers: { 'x-api-key': alice.api_key, 'last-event-id': '1' } })
    t.equal(res.status, 204)
  })

  t.test('a slot freed by a client that went away lets one new stream in, and only one', async (t) => {
    t.equal(streams().open, 2, "alice's two streams")
    held[0]!.abort()
    await eventually('the server to see the client go', () => streams().open === 1)
    const replacement = await open(alice.api_key, first)
    t.equal(replacement.status, 200)
    held[0] = replacement
    t.equal((await refused(alice.api_key, first)).status, 429, 'the cap is reached again')
  })

  t.test('streams that end with their command free their slots, once each', async (t) => {
    const watching = held.map((stream) => stream.next((event) => event.data.status === 'SUCCESS'))
    await project(first, { status: 'SUCCESS', completed_at: new Date() })
    await Promise.all(watching)
    await Promise.all(held.map((stream) => stream.done))
    // After the end a client gets the final state as one event and the end: each takes a slot and frees it.
    for (let i = 0; i < 3; i++) t.same((await (await open(alice.api_key, first)).done).map((event) => event.data.status), ['SUCCESS'], `after-the-end stream ${i + 1}`)
    const next = await submit(alice.api_key)
    const two = [await open(alice.api_key, next), await open(alice.api_key, next)]
    t.same(
      two.map((stream) => stream.status),
      [200, 200],
      'both slots are free again',
    )
    t.equal((await refused(alice.api_key, next)).status, 429, 'and there are still only two')
    two.forEach((stream) => stream.abort())
    await eventually('the server to see both go', () => streams().open === 0)
  })

  t.test('a stream that reaches its lifetime ends after a retry hint, and a reconnect with Last-Event-ID resumes', async (t) => {
    const replica = await buildServer({
      logger: createLogger('test', 'silent'),
      app: { db: api.db, secretBox: api.secretBox, s3: api.s3, s3Bucket: api.s3Bucket, rateLimits: UNLIMITED, eventStreamsPerAccount: 1, eventStreamLifetimeMs: 200 },
    })
    t.teardown(() => replica.close())
    const replicaUrl = await replica.listen({ host: '127.0.0.1', port: 0 })
    const commandId = await submit(alice.api_key)

    const firstStream = await open(alice.api_key, commandId, {}, replicaUrl)
    const firstEvents = await firstStream.done
    t.same(
      firstEvents.map((event) => [event.id, event.data.status]),
      [['0', 'QUEUED']],
    )
    t.equal(firstStream.retry, RECONNECT_HINT_MS, 'the stream ended with a retry: hint')

    // While the client was away the command moved on; it reconnects as EventSource does (the cap of 1 shows the slot was freed).
    await project(commandId, { status: 'PROCESSING', progress: 10, processing_stage: 'RUNNING' })
    const resumed = await open(alice.api_key, commandId, { 'last-event-id': firstEvents.at(-1)!.id! }, replicaUrl)
    t.equal(resumed.status, 200)
    const resumedEvents = await resumed.done
    t.same(
      resumedEvents.map((event) => [event.id, event.data.status]),
      [['1', 'PROCESSING']],
      'only what is newer than Last-Event-ID',
    )
    t.equal(resumed.retry, RECONNECT_HINT_MS)

    await project(commandId, { status: 'SUCCESS', progress: 100, processing_stage: null, completed_at: new Date() })
    const last = await open(alice.api_key, commandId, { 'last-event-id': '1' }, replicaUrl)
    t.same(
      (await last.done).map((event) => [event.id, event.data.status]),
      [['2', 'SUCCESS']],
    )
    t.equal(last.retry, null, 'a stream that ends with its command asks for no reconnect')
    const after = await fetch(eventsUrl(replicaUrl, commandId), { headers: { 'x-api-key': alice.api_key, 'last-event-id': '2' } })
    t.equal(after.status, 204, 'a finished command is 204 as before')
  })
})
