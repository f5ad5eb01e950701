/**
 * Webhook delivery benchmark: completion event published → webhook received.
 *
 *   npm run -s bench -- webhooks [--latency-events 200] [--rate 50] [--burst 2000] [--seconds 60] [--concurrency 16]
 *
 * Starts its own FerretDB (SQLite) and nats-server on loopback, a receiver
 * that answers 200 at once, and the deliverer in this process. Phase 1 sends
 * events open-loop at `--rate` per second and reports publish → receive
 * latency. Phase 2 publishes `--burst` events at once and reports sustained
 * deliveries per second until the last one arrives (bounded by `--seconds`).
 * Commands are written straight into MongoDB, already finished, the way the
 * projector leaves them; the account webhook is signed.
 */
import { randomBytes, randomUUID } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { MongoClient, type Db } from 'mongodb'
import { connect, JSONCodec } from 'nats'
import { completionEventId, completionSubject, type CompletionEvent } from '../contracts/completion-events.js'
import { newCommandDocument, toPollResponse, type CommandDocument } from '../api/commands/command-document.js'
import { draftFfmpegCommand } from '../api/commands/drafts.js'
import { SecretBox } from '../api/crypto/secret-box.js'
import { startLocalMongo } from '../api/local/embedded-mongo.js'
import { startNatsServer } from '../api/local/nats-server.js'
import { createLogger } from '../api/logger.js'
import type { CompletionSnapshot } from '../api/webhooks/attempt-runner.js'
import { CommandRepository } from '../api/commands/command-repository.js'
import { WebhookDeliverer } from '../api/webhooks/deliverer.js'
import { DeliveryRepository } from '../api/webhooks/delivery-repository.js'
import { AttemptLog } from '../api/webhooks/attempt-log.js'
import { COMPLETION_STREAM_DEFINITION, ensureStream } from '../contracts/nats-streams.js'
import { WebhookConfigRepository } from '../api/webhooks/webhook-config-repository.js'

const { values } = parseArgs({
  options: {
    'latency-events': { type: 'string', default: '200' },
    rate: { type: 'string', default: '50' },
    burst: { type: 'string', default: '2000' },
    seconds: { type: 'string', default: '60' },
    concurrency: { type: 'string', default: '16' },
  },
})
const LATENCY_EVENTS = Number(values['latency-events'])
const RATE = Number(values.rate)
const BURST = Number(values.burst)
const LIMIT_MS = Number(values.seconds) * 1000
const CONCURRENCY = Number(values.concurrency)
const codec = JSONCodec<CompletionEvent>()

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN
}

/** The snapshot each command's completion event carries, as the projector builds it. */
const snapshots = new Map<string, CompletionSnapshot>()

/** Finished commands stored as the projector leaves them; returns their ids. */
async function finishedCommands(db: Db, accountId: string, n: number): Promise<string[]> {
  const ids = Array.from({ length: n }, () => randomUUID())
  const draft = draftFfmpegCommand({
    input_files: { in_video: 'https://media.example.com/clip.mp4' },
    output_files: { out_small: 'small.mp4' },
    ffmpeg_command: 'ffmpeg -i {{in_video}} -vf scale=640:-2 {{out_small}}',
  })
  const now = new Date()
  const docs = ids.map((id) => ({ ...newCommandDocument(draft, { commandId: id, accountId }, now), status: 'FAILED' as const, error_status: 'FFMPEG_FAILED', error_message: 'bench' }))
  for (let i = 0; i < docs.length; i += 500) await db.collection<CommandDocument>('commands').insertMany(docs.slice(i, i + 500))
  for (const doc of docs) snapshots.set(doc._id, { poll: toPollResponse(doc), webhook_url: doc.webhook_url })
  return ids
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'ffkube-bench-webhooks-'))
  const ferret = await startLocalMongo(join(dir, 'ferretdb'))
  const nats = await startNatsServer(join(dir, 'nats'))
  const mongo = await MongoClient.connect(ferret.url)
  const nc = await connect({ servers: nats.url })
  const arrived = new Map<string, number>()
  const receiver = createServer((req, res) => {
    const id = String(req.headers['x-webhook-id'] ?? '')
    req.resume()
    req.on('end', () => {
      if (!arrived.has(id)) arrived.set(id, performance.now())
      res.writeHead(200).end()
    })
  })
  let deliverer: WebhookDeliverer | null = null
  try {
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve))
    const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`
    const db = mongo.db('ffkube_bench')
    const configs = new WebhookConfigRepository(db, new SecretBox([['bench', randomBytes(32)]]))
    const accountId = `acc_${randomBytes(16).toString('hex')}`
    await configs.put(accountId, url, 'bench-secret')
    await ensureStream(nc, COMPLETION_STREAM_DEFINITION)
    deliverer = new WebhookDeliverer({ deliveries: new DeliveryRepository(db), attempts: new AttemptLog(db), commands: new CommandRepository(db), nats: nc, configs, logger: createLogger('bench', 'warn'), allowPrivateNetworks: true, concurrency: CONCURRENCY })
    await deliverer.start()
    const js = nc.jetstream()
    // As the projector publishes it: with the command's snapshot, so attempt 1 reads no command.
    const publish = (id: string) =>
      js.publish(completionSubject(id), codec.encode({ command_id: id, account_id: accountId, status: 'FAILED', completed_at: new Date().toISOString(), snapshot: snapshots.get(id) }), { msgID: completionEventId(id) })
    const waitFor = async (ids: string[], deadline: number) => {
      while (ids.some((id) => !arrived.has(`whd_${id}`)) && performance.now() < deadline) await new Promise((r) => setTimeout(r, 5))
    }

    // Phase 1: latency, open loop.
    const latencyIds = await finishedCommands(db, accountId, LATENCY_EVENTS)
    const sentAt = new Map<string, number>()
    const start1 = performance.now()
    for (let i = 0; i < latencyIds.length; i++) {
      const due = start1 + (i * 1000) / RATE
      const wait = due - performance.now()
      if (wait > 0) await new Promise((r) => setTimeout(r, wait))
      sentAt.set(latencyIds[i]!, performance.now())
      await publish(latencyIds[i]!)
    }
    await waitFor(latencyIds, performance.now() + LIMIT_MS)
    const latencies = latencyIds.flatMap((id) => (arrived.has(`whd_${id}`) ? [arrived.get(`whd_${id}`)! - sentAt.get(id)!] : [])).sort((a, b) => a - b)

    // Phase 2: a burst, sustained rate.
    const burstIds = await finishedCommands(db, accountId, BURST)
    const start2 = performance.now()
    await Promise.all(burstIds.map(publish))
    const published = performance.now()
    await waitFor(burstIds, start2 + LIMIT_MS)
    const delivered = burstIds.filter((id) => arrived.has(`whd_${id}`))
    const last = Math.max(...delivered.map((id) => arrived.get(`whd_${id}`)!))
    const commands = await db.collection<CommandDocument>('commands').countDocuments({})
    const attempts = await db.collection('webhook_attempts').countDocuments({})

    const line = (k: string, v: string) => process.stdout.write(`${k.padEnd(48)} ${v}\n`)
    line('phase 1: events at', `${RATE}/s, ${latencyIds.length} events, ${latencies.length} delivered`)
    line('publish → received p50 ms', percentile(latencies, 50).toFixed(1))
    line('publish → received p99 ms', percentile(latencies, 99).toFixed(1))
    line('publish → received max ms', (latencies.at(-1) ?? NaN).toFixed(1))
    line('phase 2: burst', `${BURST} events published in ${(published - start2).toFixed(0)} ms, ${delivered.length} delivered`)
    line('sustained deliveries/s (publish start → last)', ((delivered.length * 1000) / (last - start2)).toFixed(0))
    line('commands / logged attempts at the end', `${commands} / ${attempts}`)
  } finally {
    await deliverer?.stop()
    receiver.closeAllConnections()
    receiver.close()
    await nc.close()
    await mongo.close()
    await nats.server.stop()
    await ferret.server.stop()
    await rm(dir, { recursive: true, force: true })
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err)
    process.exit(1)
  },
)
