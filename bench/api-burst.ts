/**
 * Whether the API stays responsive while the same process works off a burst
 * (issue 31): `npm run -s bench -- api-burst`.
 *
 * The service runs as `npm start` runs it (api, worker and webhooks roles in
 * one process, local executor, dispatcher, projector) against harness
 * FerretDB, NATS and versitygw (test/e2e/service.ts). BENCH_BURST (5,000)
 * submits go out open-loop at BENCH_RATE (500/s) while, at the same time,
 * GETs go out open-loop at BENCH_GET_RATE (100/s), each of one of the ten
 * commands accepted last (what clients polling their new commands ask).
 * Every command's input is a loopback URL that answers 404, so its runner
 * fails it at the fetch: the burst costs the workers a hand-off, a runner's
 * turn and a projection per command, not an ffmpeg run. Latency counts from
 * each request's intended send time (bench/open-loop.ts), so queueing counts.
 *
 * Beside it in the same run, before and after: the same two loads against
 * bare Fastify with the same schemas and validators and no I/O (api-submit's
 * `bare` server). Then it waits (at most BENCH_DRAIN_SECONDS, 900) for every
 * accepted command to end and prints how long the workers took, how the
 * commands ended, the CPU per command by process (bench/process-cpu.ts: the
 * service, its runners, FerretDB, NATS, the bench itself) and the MongoDB
 * operations per command.
 * Targets (issue 31): submit p99 <= 100 ms and GET p99 <= 20 ms during the burst.
 */
import { fork } from 'node:child_process'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { loadavg } from 'node:os'
import { join } from 'node:path'
import { connect, JSONCodec } from 'nats'
import { COMPLETION_SUBJECT_PREFIX, type CompletionEvent } from '../contracts/completion-events.js'
import { scratchDir } from '../test/harness/scratch.js'
import { serviceEnvironment, startService } from '../test/e2e/service.js'
import { benchRun } from './bench-run.js'
import { operationCountingOptions, operationsPerCommand, requestOperationCounts } from './mongo-operation-count.js'
import { cpuPerCommand, watchCpu } from './process-cpu.js'
import { agent, fixedRate, send, type Phase } from './open-loop.js'

const BURST = Number(process.env.BENCH_BURST ?? 5000)
const RATE = Number(process.env.BENCH_RATE ?? 500)
const GET_RATE = Number(process.env.BENCH_GET_RATE ?? 100)
const DRAIN_SECONDS = Number(process.env.BENCH_DRAIN_SECONDS ?? 900)
/** Submits made one at a time before the burst: JIT, connection pools, the first runner; they count among the commands waited for. */
const WARM_UP = 10

const { t, run: runBench } = benchRun()

const load = () => loadavg().map((n) => n.toFixed(2)).join(', ')

interface Server {
  port: number
  apiKey: string
}

interface BurstResult {
  submits: Phase
  gets: Phase
  accepted: string[]
  load: string
}

/** The burst against one server: BURST submits at RATE and, alongside, GETs at GET_RATE of the ten commands accepted last. */
async function burst(server: Server, body: string): Promise<BurstResult> {
  const accepted: string[] = []
  const submit = async () => {
    const answer = await send(server.port, server.apiKey, 'POST', '/api/v1/run-ffmpeg-command', body)
    if (answer.status === 200) accepted.push((JSON.parse(answer.body) as { command_id: string }).command_id)
    return answer
  }
  for (let i = 0; i < WARM_UP; i++) await submit()
  const startLoad = load()
  const [submits, gets] = await Promise.all([
    fixedRate(RATE, BURST, submit),
    fixedRate(GET_RATE, Math.round((BURST / RATE) * GET_RATE), (i) => send(server.port, server.apiKey, 'GET', `/api/v1/commands/${accepted[Math.max(0, accepted.length - 1 - (i % 10))]}`)),
  ])
  return { submits, gets, accepted, load: `${startLoad} → ${load()}` }
}

async function main(): Promise<void> {
  const dir = await scratchDir(t, 'ffkube-burst-')
  const operationsFile = join(dir, 'mongodb-operations.json')
  // Inputs that fail at once: every command ends FAILED at its runner's fetch.
  const missing = createServer((_req, res) => {
    res.statusCode = 404
    res.end()
  })
  await new Promise<void>((resolve) => missing.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => missing.close(() => resolve())))
  const inputUrl = `http://127.0.0.1:${(missing.address() as AddressInfo).port}/missing.mp4`
  const body = JSON.stringify({ input_files: { in_video: inputUrl }, output_files: { out_small: 'small.mp4' }, ffmpeg_command: 'ffmpeg -i {{in_video}} -c copy {{out_small}}' })

  const bareChild = fork(join(import.meta.dirname, 'api-submit.js'), ['--serve', 'bare', '--stored', '0'], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
  t.teardown(() => void bareChild.kill('SIGTERM'))
  const bare = await new Promise<Server>((resolve, reject) => {
    bareChild.once('message', (message) => resolve(message as Server))
    bareChild.once('exit', (code) => reject(new Error(`the bare server exited with ${code}`)))
  })

  const environment = await serviceEnvironment(t, { LOG_LEVEL: 'error', NODE_OPTIONS: operationCountingOptions(), FFKUBE_BENCH_MONGODB_OPERATIONS: operationsFile })
  const service = await startService(t, environment)
  const ffkube: Server = { port: Number(new URL(service.baseUrl).port), apiKey: service.apiKey }
  const nc = await connect({ servers: environment.env.NATS_URL as string })
  t.teardown(() => nc.close())
  const ended = new Map<string, { at: number; outcome: string }>()
  const codec = JSONCodec<CompletionEvent>()
  nc.subscribe(`${COMPLETION_SUBJECT_PREFIX}.>`, {
    callback: (_err, msg) => {
      const event = codec.decode(msg.data)
      ended.set(event.command_id, { at: performance.now(), outcome: `${event.status} ${event.snapshot?.poll.error_status ?? ''}`.trim() })
    },
  })
  process.stderr.write(`bare Fastify, before (load ${load()})…\n`)
  const bareBefore = await burst(bare, body)

  process.stderr.write(`ffkube (load ${load()})…\n`)
  const operationsBefore = await requestOperationCounts(service.child, operationsFile)
  const cpuWatch = watchCpu(process.pid)
  const started = performance.now()
  const result = await burst(ffkube, body)
  const burstSeconds = (performance.now() - started) / 1000
  const endedDuringBurst = result.accepted.filter((id) => ended.has(id)).length
  process.stderr.write(`waiting for ${result.accepted.length} commands to end (at most ${DRAIN_SECONDS} s)…\n`)
  const deadline = performance.now() + DRAIN_SECONDS * 1000
  while (result.accepted.some((id) => !ended.has(id)) && performance.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 250))
  const endedAll = result.accepted.filter((id) => ended.has(id))
  const lastEnd = Math.max(...endedAll.map((id) => ended.get(id)!.at))
  const cpu = cpuPerCommand(await cpuWatch.stop(), result.accepted.length)
  const operations = operationsPerCommand(operationsBefore, await requestOperationCounts(service.child, operationsFile), result.accepted.length)

  process.stderr.write(`bare Fastify, after (load ${load()})…\n`)
  const bareAfter = await burst(bare, body)

  const fmt = (n: number) => (Number.isFinite(n) ? n.toFixed(n < 10 ? 2 : 0) : '–')
  const columns: Array<[string, BurstResult]> = [['bare, before', bareBefore], ['ffkube (npm start)', result], ['bare, after', bareAfter]]
  const rows: Array<[string, (r: BurstResult) => string]> = [
    [`submit p50 ms @${RATE}/s`, (r) => fmt(r.submits.p50)],
    [`submit p99 ms @${RATE}/s (target ≤ 100)`, (r) => fmt(r.submits.p99)],
    ['submit max ms', (r) => fmt(r.submits.max)],
    ['submits answered 200', (r) => String(r.submits.count)],
    ['submits refused or failed / not sent (512 in flight)', (r) => `${r.submits.errors} / ${r.submits.dropped}`],
    [`GET p50 ms @${GET_RATE}/s`, (r) => fmt(r.gets.p50)],
    [`GET p99 ms @${GET_RATE}/s (target ≤ 20)`, (r) => fmt(r.gets.p99)],
    ['GET max ms', (r) => fmt(r.gets.max)],
    ['GETs non-200 or failed', (r) => String(r.gets.errors)],
    ['load average (1, 5, 15 min) start → end', (r) => r.load],
  ]
  const lines = [`| measure | ${columns.map(([name]) => name).join(' | ')} |`, `|---|${columns.map(() => '---:').join('|')}|`]
  for (const [label, pick] of rows) lines.push(`| ${label} | ${columns.map(([, r]) => pick(r)).join(' | ')} |`)
  const outcomes = new Map<string, number>()
  for (const id of endedAll) outcomes.set(ended.get(id)!.outcome, (outcomes.get(ended.get(id)!.outcome) ?? 0) + 1)
  lines.push(
    '',
    `ffkube: ${result.accepted.length} commands accepted (${WARM_UP} of them before the burst) in ${fmt(burstSeconds)} s; ${endedDuringBurst} had ended when the burst did;`,
    `${endedAll.length} ended ${fmt((lastEnd - started) / 1000)} s after the burst began (${fmt(endedAll.length / ((lastEnd - started) / 1000))} commands/s)${endedAll.length < result.accepted.length ? `; ${result.accepted.length - endedAll.length} had not ended after ${DRAIN_SECONDS} s` : ''}.`,
    `How they ended: ${[...outcomes].map(([outcome, n]) => `${outcome} ${n}`).join(', ')}.`,
    `CPU ms per command by process (burst and drain): ${cpu.map(([group, ms]) => `${group} ${fmt(ms)}`).join(', ')}.`,
    `MongoDB operations per command (burst and drain): ${fmt(operations.reduce((sum, [, n]) => sum + n, 0))} — ${operations.map(([key, n]) => `${key} ${fmt(n)}`).join(', ')}.`,
  )
  process.stdout.write(`${lines.join('\n')}\n`)
}

void runBench(main, async () => agent.destroy())
