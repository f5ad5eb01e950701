/**
 * What every webhook test needs: the API on a real MongoDB-wire server, a real
 * NATS with JetStream, a receiver on loopback, a fake clock the deliverers
 * share, and the projector's two steps done by hand (terminal state,
 * completion event).
 */
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { connect, JSONCodec, type NatsConnection } from 'nats'
import { COMPLETION_STREAM, completionEventId, completionSubject, type CompletionEvent } from '../../contracts/completion-events.js'
import { toPollResponse, type CommandDocument } from '../../api/commands/command-document.js'
import { createLogger } from '../../api/logger.js'
import { DELIVERER_CONSUMER, WebhookDeliverer, type WebhookDelivererOptions } from '../../api/webhooks/deliverer.js'
import { eventually } from '../harness/eventually.js'
import { COMPLETION_STREAM_DEFINITION, ensureStream } from '../../contracts/nats-streams.js'
import { DeliveryRepository } from '../../api/webhooks/delivery-repository.js'
import { AttemptLog } from '../../api/webhooks/attempt-log.js'
import { startApi, type TestApi } from '../harness/api.js'
import { startNats } from '../harness/nats.js'
import type { Teardown } from '../harness/scratch.js'

/** A clock that moves only when told, and sleeps that end when it passes their deadline. */
export class FakeTime {
  #now: number
  #timers: { deadline: number; done: () => void }[] = []

  constructor(start = Date.parse('2026-03-01T00:00:00Z')) {
    this.#now = start
  }

  readonly clock = (): Date => new Date(this.#now)

  readonly sleep = (ms: number, signal: AbortSignal): Promise<void> =>
    new Promise<void>((resolve) => {
      if (signal.aborted) return resolve()
      const timer = { deadline: this.#now + ms, done: () => resolve() }
      this.#timers.push(timer)
      signal.addEventListener('abort', () => {
        this.#timers = this.#timers.filter((x) => x !== timer)
        resolve()
      }, { once: true })
    })

  get now(): number {
    return this.#now
  }

  /** The deadlines deliverers are sleeping towards. */
  deadlines(): number[] {
    return this.#timers.map((x) => x.deadline)
  }

  advanceTo(ms: number): void {
    this.#now = ms
    const due = this.#timers.filter((x) => x.deadline <= ms)
    this.#timers = this.#timers.filter((x) => x.deadline > ms)
    for (const timer of due) timer.done()
  }
}

export interface Received {
  headers: IncomingHttpHeaders
  body: string
  path: string
}

export type Behaviour = (req: IncomingMessage, res: ServerResponse, n: number) => void

/** An HTTP receiver on loopback; `behaviour` decides each answer (default 200). */
export async function startReceiver(t: Teardown): Promise<{ url: string; received: Received[]; behave(b: Behaviour): void }> {
  const received: Received[] = []
  let behaviour: Behaviour = (_req, res) => res.end('ok')
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      received.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), path: req.url ?? '' })
      behaviour(req, res, received.length)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => {
    server.closeAllConnections()
    server.close(() => resolve())
  }))
  const { port } = server.address() as AddressInfo
  return { url: `http://127.0.0.1:${port}`, received, behave: (b) => void (behaviour = b) }
}

export interface World {
  api: TestApi
  nc: NatsConnection
  time: FakeTime
  /** A deliverer sharing the world's database, NATS and fake time; stopped at teardown. */
  deliverer(overrides?: Partial<WebhookDelivererOptions>): Promise<WebhookDeliverer>
  /**
   * Resolves once every completion event published so far has been handled
   * and every delivery is over (delivered, exhausted or dropped): nothing is
   * in flight and nothing waits, so no webhook can come after it.
   */
  drained(what?: string): Promise<void>
  /** Whether drained() would resolve now. */
  isDrained(): Promise<boolean>
  /** Resolves once every completion event published so far is acknowledged: its first attempt made and its delivery moved on. */
  eventsHandled(): Promise<void>
  /** Submits an FFmpeg command through the API; returns its id. */
  submit(apiKey: string, extra?: Record<string, unknown>): Promise<string>
  /**
   * What the projector does: writes the terminal state, then publishes the
   * completion event with its snapshot of the command (`snapshot: false`: an
   * event as older projectors sent it, without one).
   */
  complete(commandId: string, status?: 'SUCCESS' | 'FAILED', options?: { snapshot?: boolean }): Promise<void>
  /** GET /api/v1/commands/:id, raw text. */
  poll(apiKey: string, commandId: string): Promise<string>
  putWebhook(apiKey: string, body: { url: string; secret?: string }): Promise<void>
}

const codec = JSONCodec<CompletionEvent>()

/** `startAt`: where the fake clock starts (ms); a fixed day unless a test needs the real one. */
export async function startWorld(t: Teardown & { teardown(fn: () => unknown): void }, options: { startAt?: number } = {}): Promise<World> {
  const time = new FakeTime(options.startAt)
  // The API on the same fake clock: a redelivery it queues is due at its "now".
  const api = await startApi(t, { allowPrivateNetworks: true, clock: time.clock })
  const nats = await startNats(t)
  const nc = await connect({ servers: nats.url })
  t.teardown(() => nc.close())
  await ensureStream(nc, COMPLETION_STREAM_DEFINITION)
  const deliverers: WebhookDeliverer[] = []
  t.teardown(async () => {
    for (const d of deliverers) await d.stop()
  })
  async function allEventsAcknowledged(): Promise<boolean> {
    const consumer = await (await nc.jetstreamManager()).consumers.info(COMPLETION_STREAM, DELIVERER_CONSUMER)
    return consumer.num_pending === 0 && consumer.num_ack_pending === 0
  }
  async function isDrained(): Promise<boolean> {
    // Events first: a delivery exists before its event is acknowledged.
    return (await allEventsAcknowledged()) && (await new DeliveryRepository(api.db).nextDueAt()) === null
  }
  return {
    api,
    nc,
    time,
    async deliverer(overrides = {}) {
      // Each deliverer a replica of its own: its own batches of writes, as in its own process.
      const deliverer = new WebhookDeliverer({
        deliveries: new DeliveryRepository(api.db),
        attempts: new AttemptLog(api.db),
        commands: api.app.commands,
        nats: nc,
        configs: api.app.webhookConfigs,
        logger: createLogger('test', 'silent'),
        allowPrivateNetworks: true,
        timeoutMs: 2_000,
        clock: time.clock,
        sleep: time.sleep,
        // Past the longest retry delay: on the fake clock a deliverer then only wakes for a due retry or a nudge.
        pollIntervalMs: 24 * 3600_000,
        // Longer than any step a test moves the clock and than nextWake looks ahead: an attempt in
        // flight is taken over only where a test sets a lease of its own to see that happen.
        leaseMs: 12 * 3600_000,
        ...overrides,
      })
      deliverers.push(deliverer)
      await deliverer.start()
      return deliverer
    },
    async drained(what = 'every completion handled and every delivery over') {
      await until(what, isDrained)
    },
    isDrained,
    async eventsHandled() {
      await until('every completion event acknowledged', allEventsAcknowledged)
    },
    async submit(apiKey, extra = {}) {
      const res = await api.app.inject({
        method: 'POST',
        url: '/api/v1/run-ffmpeg-command',
        headers: { 'x-api-key': apiKey },
        payload: {
          input_files: { in_video: 'https://media.example.com/clip.mp4' },
          output_files: { out_small: 'small.mp4' },
          ffmpeg_command: 'ffmpeg -i {{in_video}} -vf scale=640:-2 {{out_small}}',
          metadata: { job: 'webhook-test', n: 7, ok: true },
          ...extra,
        },
      })
      if (res.statusCode !== 200) throw new Error(`submit answered ${res.statusCode}: ${res.body}`)
      return res.json<{ command_id: string }>().command_id
    },
    async complete(commandId, status = 'SUCCESS', options = {}) {
      const commands = api.db.collection<CommandDocument>('commands')
      const doc = await commands.findOne({ _id: commandId })
      if (!doc) throw new Error(`no command ${commandId}`)
      const now = new Date()
      const common = { status, total_processing_seconds: 2.345, ffmpeg_command_run_seconds: 1.5, completed_at: now, updated_at: now, progress: 100, processing_stage: null }
      const terminal =
        status === 'FAILED'
          ? { ...common, error_status: 'FFMPEG_FAILED', error_message: 'ffmpeg exited with status 1 "quoted" ünïcode', output_results: null }
          : {
              ...common,
              error_status: null,
              error_message: null,
              output_results: {
                out_small: {
                  // Deliberately not in the schema's order: the webhook must still match GET byte for byte.
                  status: 'STORED',
                  file_id: 'file_0123456789abcdef0123456789abcdef',
                  filename: 'small.mp4',
                  storage_url: `https://storage.example.com/outputs/${commandId}/small.mp4`,
                  storage_location: 'INTERNAL',
                  external_uri: null,
                  external_object_key: null,
                  service_store_type: 'OUTPUT',
                  is_deleted: false,
                  size_mbytes: 1.25,
                  duration: 10.01,
                  file_type: 'video',
                  file_format: 'mp4',
                  codec: 'h264',
                  pixel_format: 'yuv420p',
                  mime_type: 'video/mp4',
                  width: 640,
                  height: 360,
                  frame_rate: 29.97,
                  bitrate_video_kb: 900,
                  bitrate_audio_kb: 128,
                  files: [{ storage_url: `https://storage.example.com/outputs/${commandId}/small.mp4`, filename: 'small.mp4', size_mbytes: 1.25, mime_type: 'video/mp4', external_object_key: null }],
                  file_count: 1,
                },
              },
            }
      await commands.updateOne({ _id: commandId }, { $set: terminal as Partial<CommandDocument> })
      const event: CompletionEvent = { command_id: commandId, account_id: doc.account_id, status, completed_at: now.toISOString() }
      if (options.snapshot !== false) {
        const finished = { ...doc, ...terminal } as CommandDocument
        event.snapshot = { poll: toPollResponse(finished), webhook_url: finished.webhook_url }
      }
      await nc.jetstream().publish(completionSubject(commandId), codec.encode(event), { msgID: completionEventId(commandId) })
    },
    async poll(apiKey, commandId) {
      const res = await api.app.inject({ method: 'GET', url: `/api/v1/commands/${commandId}`, headers: { 'x-api-key': apiKey } })
      if (res.statusCode !== 200) throw new Error(`GET answered ${res.statusCode}`)
      return res.body
    },
    async putWebhook(apiKey, body) {
      const res = await api.app.inject({ method: 'PUT', url: '/api/v1/webhook-config', headers: { 'x-api-key': apiKey }, payload: body })
      if (res.statusCode !== 200) throw new Error(`PUT answered ${res.statusCode}: ${res.body}`)
    },
  }
}

/** eventually() for checks that answer with anything truthy (a count, a list, true). */
export function until<T>(what: string, check: () => T | Promise<T>, ms?: number): Promise<NonNullable<T>> {
  return eventually(what, async () => (await check()) || null, ms) as Promise<NonNullable<T>>
}

/** The earliest time a deliverer sleeps towards for a due retry, if any (its idle poll is 24 h away, a held delivery's lease 12 h). */
export function retryDeadline(world: World): number | null {
  const ahead = world.time.deadlines().filter((d) => d > world.time.now && d - world.time.now <= 10 * 3600_000)
  return ahead.length > 0 ? Math.min(...ahead) : null
}

/** The next time a deliverer is sleeping towards for a due retry. */
export async function nextWake(world: World, what: string): Promise<number> {
  return until(what, () => retryDeadline(world))
}

/** Moves the clock to each retry the deliverers wait for, until every delivery is over. */
export async function runOut(world: World): Promise<void> {
  await until('every retry run out', () => {
    const deadline = retryDeadline(world)
    if (deadline === null) return world.isDrained()
    world.time.advanceTo(deadline)
    return false
  })
}

/** How many times the receiver got each attempt, keyed `<delivery id>#<attempt>`. */
export function timesEachAttempt(received: readonly Received[]): Map<string, number> {
  const times = new Map<string, number>()
  for (const r of received) {
    const key = `${String(r.headers['x-webhook-id'])}#${String(r.headers['x-webhook-attempt'])}`
    times.set(key, (times.get(key) ?? 0) + 1)
  }
  return times
}
