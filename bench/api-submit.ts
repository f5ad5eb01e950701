/**
 * Submit and poll latency of the API against a bare Fastify route with the
 * same schemas, measured in one run on this host:
 *
 *   npm run -s bench -- api-submit [--seconds 5] [--rate 500] [--concurrency 32] [--stored 1000,100000]
 *                                  [--baseline DIR] [--rounds N]
 *
 * --baseline DIR: another built checkout (its dist/), whose ffkube variants are
 * measured beside this tree's as `base:<variant>`, alternated within each
 * round (the order flips every round) so the machine's load hits both.
 * Each ffkube variant also reports the store operations its submits and GETs
 * send (counted by the driver's command monitoring in the server process).
 * GET is measured three times: of a command just accepted (QUEUED, what a
 * client polls while it waits: read from the store every time), of 64 such
 * commands in turn (many clients, each polling its own: the reads a replica
 * groups are of distinct records, api/commands/poll-reads.ts), and of one of
 * the account's finished commands (the seeded SUCCESS records: a replica
 * answers those from its cache, api/commands/finished-command-cache.ts).
 * BENCH_SERVER_NODE_OPTIONS='--cpu-prof --cpu-prof-dir=DIR' profiles the servers.
 *
 * Starts its own FerretDB and NATS (rate-limit counters) on loopback
 * (BENCH_MONGODB_URL uses a running server instead). Each ffkube variant is
 * measured once per --stored size: the database first holds that many command
 * records of other accounts and of the benchmark's own, as a service that has
 * run for a while does. Each server runs in a child process
 * (so the load generator does not share its event loop), and drives it over
 * loopback HTTP with keep-alive: a fixed-rate phase (latency measured from the
 * intended send time, so queueing counts) and a closed-loop saturation phase.
 * Bounded: every phase stops after --seconds, and in-flight requests are capped.
 */
import { fork, type ChildProcess } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { S3Client } from '@aws-sdk/client-s3'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import Fastify, { type FastifyInstance } from 'fastify'
import { MongoClient, type Db, type Document } from 'mongodb'
import { connect } from 'nats'
import { buildServer } from '../api/server.js'
import { CommandIdResponse, CommandParams, CommandPollResponse, RunFfmpegCommandBody } from '../api/commands/schemas.js'
import { SecretBox } from '../api/crypto/secret-box.js'
import { CommandRepository } from '../api/commands/command-repository.js'
import { Dispatcher } from '../api/dispatcher/dispatcher.js'
import { startLocalMongo } from '../api/local/embedded-mongo.js'
import { startNatsServer } from '../api/local/nats-server.js'
import { createLogger } from '../api/logger.js'
import { buildValidator } from '../api/validation/validator-compiler.js'
import { operationsPerRequest, requestOperationCounts } from './mongo-operation-count.js'
import { agent, fixedRate, saturate, send, type Phase } from './open-loop.js'

const BODY = JSON.stringify({
  input_files: { in_video: 'https://media.example.com/clip.mp4' },
  output_files: { out_small: 'small.mp4' },
  ffmpeg_command: 'ffmpeg -i {{in_video}} -vf scale=640:-2 {{out_small}}',
  metadata: { bench: true },
})

/**
 * bare: Fastify with the same schemas, no I/O. ffkube: the real app (auth,
 * rate-limit counting, insert). ffkube-nolimit: rate limiting off, to show its
 * share. ffkube-dispatcher: plus the in-process dispatcher with a no-op executor.
 */
type Variant = 'bare' | 'ffkube' | 'ffkube-nolimit' | 'ffkube-dispatcher'

/** Waiting commands polled in turn by the GET phase of many clients. */
const WAITING_COMMANDS = 64

/** Command records stored before a variant is measured. */
const SEED_BATCH = 1000

interface Ready {
  port: number
  apiKey: string
}

/** Child process: one server variant, listening on a free loopback port. */
async function serve(variant: Variant, stored: number): Promise<void> {
  let port: number
  let apiKey = 'none'
  if (variant === 'bare') {
    // The app's own validators, so the baseline validates exactly as the API does.
    const app = Fastify({ logger: false, schemaController: { compilersFactory: { buildValidator } } }).withTypeProvider<TypeBoxTypeProvider>()
    const poll = {
      command_id: randomUUID(),
      status: 'QUEUED' as const,
      command_type: 'FFMPEG_COMMAND' as const,
      total_processing_seconds: null,
      ffmpeg_command_run_seconds: null,
      metadata: { bench: true },
      error_status: null,
      error_message: null,
      original_request: JSON.parse(BODY),
      progress: null,
      processing_stage: null,
    }
    app.post('/api/v1/run-ffmpeg-command', { schema: { body: RunFfmpegCommandBody, response: { 200: CommandIdResponse } } }, async () => ({ command_id: randomUUID() }))
    app.get('/api/v1/commands/:commandId', { schema: { params: CommandParams, response: { 200: CommandPollResponse } } }, async (req) => ({ ...poll, command_id: req.params.commandId }))
    await app.listen({ port: 0, host: '127.0.0.1' })
    port = (app.server.address() as { port: number }).port
  } else {
    const mongo = await MongoClient.connect(process.env.BENCH_MONGODB_URL!)
    const db = mongo.db(databaseName(variant, stored))
    await db.dropDatabase()
    // Never called by these two routes; the files routes would need a real bucket.
    const s3 = new S3Client({ endpoint: 'http://127.0.0.1:9', region: 'us-east-1', forcePathStyle: true, credentials: { accessKeyId: 'x', secretAccessKey: 'x' } })
    const logger = createLogger('bench', 'silent')
    let dispatcher: Dispatcher | null = null
    if (variant === 'ffkube-dispatcher') {
      dispatcher = new Dispatcher({ commands: new CommandRepository(db), logger, executor: { name: 'noop', execute: async () => {} } })
      dispatcher.start()
    }
    const app = await buildServer({
      logger,
      app: {
        db,
        secretBox: new SecretBox([['bench', Buffer.alloc(32, 7)]]),
        s3,
        s3Bucket: 'unused',
        // Limits so high they never bite, so each request still pays for counting.
        nats: await connect({ servers: process.env.BENCH_NATS_URL! }),
        rateLimits: variant === 'ffkube-nolimit' ? { free: 0, trial: 0, growth: 0, business: 0 } : { free: 1e9, trial: 1e9, growth: 1e9, business: 1e9 },
        onCommandsAccepted: () => dispatcher?.nudge(),
      },
    })
    await app.listen({ port: 0, host: '127.0.0.1' })
    port = (app.server.address() as { port: number }).port
    apiKey = (await app.accounts.createAccount('business')).api_key
    await seedCommands(app, db, apiKey, stored)
  }
  // An orderly exit, so a server run under --cpu-prof (BENCH_SERVER_NODE_OPTIONS) writes its profile.
  process.once('SIGTERM', () => process.exit(0))
  process.send!({ port, apiKey } satisfies Ready)
}

function databaseName(variant: Variant, stored: number): string {
  return `bench_${variant.replaceAll('-', '_')}_${stored}`
}

/**
 * Stores `count` finished command records before the measurement: one in ten
 * the benchmark account's own, the rest spread over 100 other accounts. Each
 * is a copy of a record the API itself wrote, with its own id and time.
 */
async function seedCommands(app: FastifyInstance, db: Db, apiKey: string, count: number): Promise<void> {
  if (count === 0) return
  const submitted = await app.inject({ method: 'POST', url: '/api/v1/run-ffmpeg-command', headers: { 'x-api-key': apiKey, 'content-type': 'application/json' }, payload: BODY })
  const { command_id: templateId } = submitted.json<{ command_id: string }>()
  const commands = db.collection<Document & { _id: string }>('commands')
  const template = await commands.findOne({ _id: templateId })
  if (!template) throw new Error('the seed template was not stored')
  const started = Date.now() - count * 1000
  for (let i = 0; i < count; i += SEED_BATCH) {
    const batch = Array.from({ length: Math.min(SEED_BATCH, count - i) }, (_, k) => {
      const n = i + k
      return {
        ...template,
        _id: randomUUID(),
        account_id: n % 10 === 0 ? template.account_id : `acc_seed_${n % 100}`,
        status: 'SUCCESS',
        created_at: new Date(started + n * 1000),
        dispatch_state: 'done',
        dispatch_due_at: new Date(started + n * 1000),
        dispatch_claim: null,
        dispatch_attempts: 1,
      }
    })
    await commands.insertMany(batch)
  }
  // The template was accepted like any command: handed off already, as the copies are.
  await commands.updateOne({ _id: templateId }, { $set: { dispatch_state: 'done' } })
}

/** CPU seconds a process has used so far (user + system, from /proc), or NaN where there is no /proc. */
async function cpuSeconds(pid: number | undefined): Promise<number> {
  if (pid === undefined) return NaN
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '')
  // Fields after the command name, which may hold spaces: utime and stime are the 12th and 13th.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return (Number(fields[11]) + Number(fields[12])) / 100
}

/** The processes whose CPU a request costs: the server, the store, NATS. */
interface CostedPids {
  service?: number
  store?: number
  nats?: number
}

/** CPU milliseconds per answered request of each process over `phase`, which a loaded machine slows but does not inflate. */
async function cpuPerRequest(pids: CostedPids, phase: () => Promise<Phase>): Promise<{ phase: Phase; service: number; store: number; nats: number }> {
  const names = ['service', 'store', 'nats'] as const
  const before = await Promise.all(names.map((name) => cpuSeconds(pids[name])))
  const result = await phase()
  const after = await Promise.all(names.map((name) => cpuSeconds(pids[name])))
  const per = (i: number) => ((after[i]! - before[i]!) * 1000) / Math.max(1, result.count)
  return { phase: result, service: per(0), store: per(1), nats: per(2) }
}

/**
 * What the database alone costs after the variant's phases, one operation at
 * a time: a findOne by _id (the GET's lookup; FerretDB 1.x scans the table for
 * it) and an insertOne of a command-sized document.
 */
async function databaseFloor(mongoUrl: string, database: string, commandId: string): Promise<{ stored: number; findMs: number; insertMs: number }> {
  const client = await MongoClient.connect(mongoUrl)
  try {
    const db = client.db(database)
    const commands = db.collection<{ _id: string }>('commands')
    const stored = await commands.countDocuments()
    const sample = await commands.findOne({ _id: commandId })
    let started = performance.now()
    for (let i = 0; i < 20; i++) await commands.findOne({ _id: commandId })
    const findMs = (performance.now() - started) / 20
    const scratch = db.collection<{ _id: string }>('bench_floor')
    started = performance.now()
    for (let i = 0; i < 20; i++) await scratch.insertOne({ ...sample, _id: randomUUID() })
    const insertMs = (performance.now() - started) / 20
    return { stored, findMs, insertMs }
  } finally {
    await client.close()
  }
}

/** One of the benchmark account's finished commands (the seeded SUCCESS records), asked of the API itself; null when none is stored. */
async function finishedCommandOf(ready: Ready): Promise<string | null> {
  const { body } = await send(ready.port, ready.apiKey, 'GET', '/api/v1/commands?status=SUCCESS&limit=1')
  return (JSON.parse(body) as { commands?: { command_id: string }[] }).commands?.[0]?.command_id ?? null
}

/** Where a server variant's code comes from: this checkout's dist/, or the baseline's. */
interface Tree {
  /** The tree's dist/bench directory. */
  bench: string
}

async function startServer(tree: Tree, variant: Variant, stored: number, mongoUrl: string, natsUrl: string, operationsFile: string): Promise<{ child: ChildProcess; ready: Ready }> {
  const env = {
    ...process.env,
    BENCH_MONGODB_URL: mongoUrl,
    BENCH_NATS_URL: natsUrl,
    // The tree's own counter, so it patches the driver that tree's server loads.
    // BENCH_SERVER_NODE_OPTIONS: e.g. `--cpu-prof --cpu-prof-dir=DIR` to profile the servers alone.
    NODE_OPTIONS: `--import=${join(tree.bench, 'mongo-operation-count.js')} ${process.env.BENCH_SERVER_NODE_OPTIONS ?? ''}`,
    FFKUBE_BENCH_MONGODB_OPERATIONS: operationsFile,
  }
  const child = fork(join(tree.bench, 'api-submit.js'), ['--serve', variant, '--stored', String(stored)], { env, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
  const ready = await new Promise<Ready>((resolve, reject) => {
    child.once('message', (message) => resolve(message as Ready))
    child.once('exit', (code) => reject(new Error(`${variant} server exited with ${code}`)))
  })
  return { child, ready }
}

async function measure(tree: Tree, variant: Variant, stored: number, mongoUrl: string, natsUrl: string, options: { seconds: number; rate: number; concurrency: number; dir: string }, servers: CostedPids) {
  const operationsFile = join(options.dir, 'mongodb-operations.json')
  const { child, ready } = await startServer(tree, variant, stored, mongoUrl, natsUrl, operationsFile)
  const pids = { ...servers, service: child.pid }
  /** The closed loop of `call`: its rate and latency, the CPU per request of each process, and the store operations per request. */
  const saturated = async (call: () => Promise<{ status: number }>) => {
    let operations = NaN
    const cost = await cpuPerRequest(pids, async () => {
      if (variant === 'bare') return saturate(options.concurrency, options.seconds, call)
      const before = await requestOperationCounts(child, operationsFile)
      const result = await saturate(options.concurrency, options.seconds, call)
      operations = operationsPerRequest(before, await requestOperationCounts(child, operationsFile), result.count)
      return result
    })
    return { cost, operations }
  }
  try {
    const submit = () => send(ready.port, ready.apiKey, 'POST', '/api/v1/run-ffmpeg-command', BODY)
    const atRate = (call: () => Promise<{ status: number }>) => fixedRate(options.rate, Math.round(options.rate * options.seconds), call)
    await saturate(8, 1, submit) // warm-up: JIT, connection pool, first index pages
    const submitAtRate = await atRate(submit)
    const { cost: submitCost, operations: submitOperations } = await saturated(submit)
    const submitMax = submitCost.phase
    /** GETs of these commands in turn: at the fixed rate, then saturated (CPU and store operations per request). */
    const gets = async (...commandIds: string[]) => {
      let turn = 0
      const poll = () => send(ready.port, ready.apiKey, 'GET', `/api/v1/commands/${commandIds[turn++ % commandIds.length]!}`)
      await saturate(8, 1, poll)
      const getAtRate = await atRate(poll)
      const { cost: getCost, operations: getOperations } = await saturated(poll)
      return { getAtRate, getMax: getCost.phase, getCost, getOperations }
    }
    // A command just accepted (QUEUED: what a client polls while it waits), then one of the account's finished ones.
    const { body } = await submit()
    const commandId = (JSON.parse(body) as { command_id: string }).command_id
    const waiting = await gets(commandId)
    // Many clients each polling their own command: the GETs read distinct records.
    const manyIds: string[] = []
    for (let i = 0; i < WAITING_COMMANDS; i++) manyIds.push((JSON.parse((await submit()).body) as { command_id: string }).command_id)
    const many = await gets(...manyIds)
    const finishedId = variant === 'bare' ? commandId : await finishedCommandOf(ready)
    const finished = finishedId ? await gets(finishedId) : null
    const floor = variant === 'bare' ? { stored: NaN, findMs: NaN, insertMs: NaN } : await databaseFloor(mongoUrl, databaseName(variant, stored), commandId)
    return { submitAtRate, submitMax, submitCost, submitOperations, ...waiting, many, finished, ...floor }
  } finally {
    const exited = child.exitCode === null ? new Promise((resolve) => child.once('exit', resolve)) : Promise.resolve()
    child.kill('SIGTERM')
    await exited
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      serve: { type: 'string' },
      seconds: { type: 'string', default: '5' },
      rate: { type: 'string', default: '500' },
      concurrency: { type: 'string', default: '32' },
      variants: { type: 'string', default: 'bare,ffkube,ffkube-nolimit,ffkube-dispatcher' },
      stored: { type: 'string', default: '1000,100000' },
      baseline: { type: 'string' },
      rounds: { type: 'string', default: '1' },
    },
  })
  if (values.serve) return serve(values.serve as Variant, Number(values.stored))
  const rounds = Number(values.rounds)
  if (!Number.isSafeInteger(rounds) || rounds < 1) throw new Error('--rounds is a whole number of at least 1')
  const here: Tree = { bench: import.meta.dirname }
  const baseline: Tree | null = values.baseline ? { bench: join(values.baseline, 'dist', 'bench') } : null
  const sizes = values.stored.split(',').map(Number)
  if (sizes.some((n) => !Number.isSafeInteger(n) || n < 0)) throw new Error('--stored is a comma-separated list of whole numbers')
  // The machine is shared: the figures mean little without the load they were taken under.
  const loadAtStart = loadavg()
  const dir = await mkdtemp(join(tmpdir(), 'ffkube-bench-'))
  const options = { seconds: Number(values.seconds), rate: Number(values.rate), concurrency: Number(values.concurrency), dir }
  const stops: (() => Promise<void>)[] = []
  try {
    let mongoUrl = process.env.BENCH_MONGODB_URL
    let described = `MongoDB at ${mongoUrl?.replace(/\/\/.*@/, '//')}`
    let storePid: number | undefined
    if (!mongoUrl) {
      const ferret = await startLocalMongo(dir)
      storePid = ferret.server.pid
      stops.unshift(() => ferret.server.stop())
      mongoUrl = ferret.url
      described = 'FerretDB (SQLite, with ffkube\'s patches) on this host'
    }
    // The rate-limit counters live in NATS KV, as in production.
    const nats = await startNatsServer(join(dir, 'nats'))
    stops.unshift(() => nats.server.stop())
    const results: Record<string, Awaited<ReturnType<typeof measure>>> = {}
    for (let round = 1; round <= rounds; round++) {
      for (const variant of values.variants.split(',') as Variant[]) {
        for (const stored of variant === 'bare' ? [0] : sizes) {
          // This tree and the baseline back to back, the first of the two flipping every round.
          const trees: Array<[string, Tree]> = [['', here]]
          if (baseline && variant !== 'bare') trees[round % 2 === 0 ? 'unshift' : 'push'](['base:', baseline])
          for (const [prefix, tree] of trees) {
            const name = `${prefix}${variant === 'bare' ? variant : `${variant}@${stored}`}${rounds > 1 ? ` r${round}` : ''}`
            process.stderr.write(`measuring ${name}… (load ${loadavg()[0]!.toFixed(2)})\n`)
            results[name] = await measure(tree, variant, stored, mongoUrl, nats.url, options, { store: storePid, nats: nats.server.pid })
          }
        }
      }
    }
    const fmt = (n: number) => (Number.isFinite(n) ? n.toFixed(n < 10 ? 2 : 0) : '–')
    const rows: [string, (r: (typeof results)[string]) => number][] = [
      [`submit p50 ms @${options.rate} rps`, (r) => r.submitAtRate.p50],
      [`submit p99 ms @${options.rate} rps`, (r) => r.submitAtRate.p99],
      [`submit not sent (512 in flight) @${options.rate} rps`, (r) => r.submitAtRate.dropped],
      [`submit non-200 answers or connection errors @${options.rate} rps`, (r) => r.submitAtRate.errors],
      [`submit max rps (${options.concurrency} clients)`, (r) => r.submitMax.rps],
      [`submit p99 ms at saturation`, (r) => r.submitMax.p99],
      [`GET of a waiting command p50 ms @${options.rate} rps`, (r) => r.getAtRate.p50],
      [`GET of a waiting command p99 ms @${options.rate} rps`, (r) => r.getAtRate.p99],
      [`GET of a waiting command max rps (${options.concurrency} clients)`, (r) => r.getMax.rps],
      ['GET of a waiting command CPU ms per request at saturation: service', (r) => r.getCost.service],
      ['GET of a waiting command CPU ms per request at saturation: store', (r) => r.getCost.store],
      ['GET of a waiting command CPU ms per request at saturation: NATS', (r) => r.getCost.nats],
      ['submit CPU ms per request at saturation: service', (r) => r.submitCost.service],
      ['submit CPU ms per request at saturation: store', (r) => r.submitCost.store],
      ['submit CPU ms per request at saturation: NATS', (r) => r.submitCost.nats],
      ['store operations per submit at saturation', (r) => r.submitOperations],
      ['store operations per GET of a waiting command at saturation', (r) => r.getOperations],
      [`GET of ${WAITING_COMMANDS} waiting commands in turn p50 ms @${options.rate} rps`, (r) => r.many.getAtRate.p50],
      [`GET of ${WAITING_COMMANDS} waiting commands in turn p99 ms @${options.rate} rps`, (r) => r.many.getAtRate.p99],
      [`GET of ${WAITING_COMMANDS} waiting commands in turn max rps (${options.concurrency} clients)`, (r) => r.many.getMax.rps],
      [`GET of ${WAITING_COMMANDS} waiting commands in turn CPU ms per request at saturation: service`, (r) => r.many.getCost.service],
      [`GET of ${WAITING_COMMANDS} waiting commands in turn CPU ms per request at saturation: store`, (r) => r.many.getCost.store],
      [`store operations per GET of ${WAITING_COMMANDS} waiting commands in turn at saturation`, (r) => r.many.getOperations],
      [`GET of a finished command p50 ms @${options.rate} rps`, (r) => r.finished?.getAtRate.p50 ?? NaN],
      [`GET of a finished command p99 ms @${options.rate} rps`, (r) => r.finished?.getAtRate.p99 ?? NaN],
      [`GET of a finished command max rps (${options.concurrency} clients)`, (r) => r.finished?.getMax.rps ?? NaN],
      ['GET of a finished command CPU ms per request at saturation: service', (r) => r.finished?.getCost.service ?? NaN],
      ['GET of a finished command CPU ms per request at saturation: store', (r) => r.finished?.getCost.store ?? NaN],
      ['store operations per GET of a finished command at saturation', (r) => r.finished?.getOperations ?? NaN],
      ['command records at the end', (r) => r.stored],
      ['driver findOne by _id, ms (at that size)', (r) => r.findMs],
      ['driver insertOne, ms', (r) => r.insertMs],
    ]
    const names = Object.keys(results)
    const lines = [`| measure | ${names.join(' | ')} |`, `|---|${names.map(() => '---:').join('|')}|`]
    for (const [label, pick] of rows) lines.push(`| ${label} | ${names.map((name) => fmt(pick(results[name]!))).join(' | ')} |`)
    // How the API degrades with what it has stored: the same variant at the largest size over the smallest.
    const [fewest, most] = [Math.min(...sizes), Math.max(...sizes)]
    const small = results[`ffkube@${fewest}${rounds > 1 ? ' r1' : ''}`]
    const large = results[`ffkube@${most}${rounds > 1 ? ' r1' : ''}`]
    if (small && large && fewest !== most) {
      lines.push('', `ffkube with ${most} stored over ffkube with ${fewest} stored:`)
      lines.push(`- GET p50 ${fmt(large.getAtRate.p50 / small.getAtRate.p50)}×, GET p99 ${fmt(large.getAtRate.p99 / small.getAtRate.p99)}×, GET max rps ${fmt(large.getMax.rps / small.getMax.rps)}×`)
      lines.push(`- submit p99 ${fmt(large.submitAtRate.p99 / small.submitAtRate.p99)}×, submit max rps ${fmt(large.submitMax.rps / small.submitMax.rps)}×`)
    }
    process.stdout.write(`${lines.join('\n')}\n`)
    process.stdout.write(`\n${options.seconds} s per phase, loopback, keep-alive; ${described}.\n`)
    const load = (l: number[]) => l.map((n) => n.toFixed(2)).join(', ')
    process.stdout.write(`Load average (1, 5, 15 min): ${load(loadAtStart)} at the start, ${load(loadavg())} at the end.\n`)
  } finally {
    agent.destroy()
    for (const stop of stops) await stop()
    await rm(dir, { recursive: true, force: true })
  }
}

main().catch((err: unknown) => {
  console.error(err)
  process.exit(1)
})
