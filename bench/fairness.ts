/**
 * Fairness benchmark (`npm run -s bench -- fairness`).
 * The whole service runs as `npm start` runs it (child process, local
 * executor, projector, dispatcher) against harness FerretDB, NATS and versitygw;
 * inputs come from a loopback HTTP server.
 *   1. one command's run time: a transcode submitted alone, submit → SUCCESS
 *      (the CompletionEvent), BENCH_SAMPLES times; its median is "one
 *      command's run time" below.
 *   2. account A submits a backlog of BENCH_BACKLOG (200) of the same
 *      command, ten per request; once A's first command has ended (runners
 *      busy, dispatch in its steady state), account B submits one. Printed:
 *      B's wait from acceptance to PROCESSING (the record's created_at and
 *      started_at, read from the database: the runner reports PROCESSING
 *      250 ms after it starts, so this is an upper bound of the wait for a
 *      runner), beside one command's run time, and beside
 *      what strict first-come-first-served would have made B wait, measured in
 *      the same run: A's commands still waiting when B was accepted, times the
 *      time A's backlog took per command (LOCAL_RUNNER_CONCURRENCY runners at
 *      once). B's probe is repeated BENCH_PROBES (5) times, each after the
 *      previous ended; median and max printed. The service is stopped before
 *      A's backlog drains.
 * Knobs: BENCH_SAMPLES, BENCH_BACKLOG, BENCH_PROBES, LOCAL_RUNNER_CONCURRENCY.
 */
import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { MongoClient } from 'mongodb'
import { connect, JSONCodec } from 'nats'
import { COMPLETION_SUBJECT_PREFIX, type CompletionEvent } from '../contracts/completion-events.js'
import { makeClip, serveFiles } from '../test/harness/media.js'
import { scratchDir } from '../test/harness/scratch.js'
import { Client, serviceEnvironment, startService, type ServiceEnvironment } from '../test/e2e/service.js'
import { percentile } from './table.js'
import { benchRun } from './bench-run.js'

const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 5)
const BACKLOG = Number(process.env.BENCH_BACKLOG ?? 200)
const PROBES = Number(process.env.BENCH_PROBES ?? 5)

const { t, run: runBench } = benchRun()

/** A second account, made with the admin CLI against the service's database and keys. */
async function createAccount(environment: ServiceEnvironment): Promise<string> {
  const child = spawn(process.execPath, ['dist/api/admin/cli.js', 'create-account', '--plan', 'business', '--name', 'B'], { env: environment.env, stdio: ['ignore', 'pipe', 'inherit'] })
  let out = ''
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()))
  const code = await new Promise((resolve) => child.once('exit', resolve))
  if (code !== 0) throw new Error(`create-account exited ${String(code)}`)
  return (JSON.parse(out) as { api_key: string }).api_key
}

/** When each command's end was announced (performance.now()), and a wait for one. */
class Completions {
  readonly ended = new Map<string, number>()
  readonly #waiting = new Map<string, () => void>()

  observe(event: CompletionEvent): void {
    this.ended.set(event.command_id, performance.now())
    if (event.status !== 'SUCCESS') process.stderr.write(`command ${event.command_id} ended ${event.status}\n`)
    this.#waiting.get(event.command_id)?.()
  }

  async wait(id: string): Promise<number> {
    if (!this.ended.has(id)) await new Promise<void>((resolve) => this.#waiting.set(id, resolve))
    return this.ended.get(id)!
  }
}

const round = (n: number) => Math.round(n * 100) / 100

async function main(): Promise<void> {
  const dir = await scratchDir(t, 'ffkube-bench-fair-')
  const environment = await serviceEnvironment(t, {
    LOG_LEVEL: 'error',
    ...(process.env.LOCAL_RUNNER_CONCURRENCY ? { LOCAL_RUNNER_CONCURRENCY: process.env.LOCAL_RUNNER_CONCURRENCY } : {}),
  })
  const [service, clip] = await Promise.all([startService(t, environment), makeClip(join(dir, 'clip.mp4'), { seconds: 4, width: 640, height: 360, fps: 25 })])
  const media = await serveFiles(t, [clip])
  const a = new Client(service)
  const b = new Client({ baseUrl: service.baseUrl, apiKey: await createAccount(environment) })
  const nc = await connect({ servers: environment.env.NATS_URL as string })
  t.teardown(() => nc.close())
  const completions = new Completions()
  const codec = JSONCodec<CompletionEvent>()
  nc.subscribe(`${COMPLETION_SUBJECT_PREFIX}.>`, { callback: (_err, msg) => completions.observe(codec.decode(msg.data)) })
  const command = {
    input_files: { in_v: media.url(clip) },
    output_files: { out_x: 'small.mp4' },
    ffmpeg_command: 'ffmpeg -i {{in_v}} -vf scale=-2:240 -c:v libx264 -preset medium -c:a copy {{out_x}}',
  }

  // 1: one command's run time, alone.
  const alone: number[] = []
  for (let i = 0; i < SAMPLES; i++) {
    const started = performance.now()
    const { command_id: id } = await b.post('/run-ffmpeg-command', command)
    alone.push((await completions.wait(id)) - started)
  }
  const runMs = percentile([...alone].sort((x, y) => x - y), 50)

  // 2: A's backlog, then B's one command.
  const backlogStarted = performance.now()
  const backlog: string[] = []
  for (let i = 0; i < BACKLOG; i += 10) {
    const commands = Array.from({ length: Math.min(10, BACKLOG - i) }, () => command)
    backlog.push(...(await a.post('/run-multiple-ffmpeg-commands', { commands })).command_ids)
  }
  await Promise.race(backlog.map((id) => completions.wait(id)))
  // A few more of A's, so the rate of its backlog is measured over several commands.
  while (backlog.filter((id) => completions.ended.has(id)).length < 4) await new Promise((resolve) => setTimeout(resolve, 20))
  const mongo = await MongoClient.connect(environment.env.MONGODB_URL as string)
  t.teardown(() => mongo.close())
  const records = mongo.db(environment.env.MONGODB_DATABASE as string).collection<{ _id: string; created_at: Date; started_at?: Date | null }>('commands')
  // B's probe, PROBES times, each after the previous ended: A's backlog is still far from drained.
  const waits: number[] = []
  let aheadInFifo = 0
  let perCommandMs = 0
  for (let probe = 0; probe < PROBES; probe++) {
    const doneBeforeB = backlog.filter((id) => completions.ended.has(id)).length
    perCommandMs = (performance.now() - backlogStarted) / doneBeforeB
    aheadInFifo = BACKLOG - doneBeforeB
    const { command_id: single } = await b.post('/run-ffmpeg-command', command)
    await completions.wait(single)
    const record = await records.findOne({ _id: single })
    if (!record?.started_at) throw new Error('B\'s command has no started_at: it ended before its first PROCESSING report')
    waits.push(record.started_at.getTime() - record.created_at.getTime())
  }
  const sortedWaits = [...waits].sort((x, y) => x - y)
  const waitMs = percentile(sortedWaits, 50)
  process.stdout.write(
    `${JSON.stringify({
      phase: 'fairness: B submits 1 command behind A\'s backlog',
      backlog: BACKLOG,
      runners: Number(process.env.LOCAL_RUNNER_CONCURRENCY ?? 0) || 'cores',
      one_command_run_ms_median: Math.round(runMs),
      b_probes: PROBES,
      b_accepted_to_processing_ms_median: Math.round(waitMs),
      b_accepted_to_processing_ms_max: Math.round(sortedWaits.at(-1)!),
      b_wait_in_command_run_times_median: round(waitMs / runMs),
      b_wait_in_command_run_times_max: round(sortedWaits.at(-1)! / runMs),
      a_backlog_ms_per_command: Math.round(perCommandMs),
      a_commands_ahead_of_b_in_fifo: aheadInFifo,
      fifo_wait_ms: Math.round(aheadInFifo * perCommandMs),
      fifo_wait_in_command_run_times: round((aheadInFifo * perCommandMs) / runMs),
    })}\n`,
  )
}

void runBench(main)
