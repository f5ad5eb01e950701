/**
 * Store operations per command (issue 31 item 3): the MongoDB operations the
 * service sends for one remux, from its submit to the GET that shows it
 * SUCCESS, counted by the driver's command monitoring in the service itself
 * (mongo-operation-count.ts), by kind and by kind and collection, beside what
 * a minimal design needs.
 *
 * The service runs as `npm start` runs it (local executor, api, worker and
 * webhooks roles in one process) against the harness's FerretDB, NATS and S3.
 * `BENCH_COMMANDS` (20) remux commands of a 1 s clip run one at a time, each
 * submitted and then polled with GET every `BENCH_POLL_MS` (50 ms) until it is
 * terminal, after one command that warms the caches and the runner. The
 * dispatcher and the other loops also poll while nothing happens; their
 * operations over an idle window as long as the commands took are counted
 * too and printed, and taken off the per-command figures ("own").
 *
 * `BENCH_ENTRY`: the service's built entry point (default dist/api/main.js),
 * e.g. another checkout's, to count a baseline tree with this bench; that
 * tree's own counter is loaded (beside its entry, ../bench), so it patches the
 * driver that tree loads.
 */
import { availableParallelism, loadavg } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { makeClip, serveFiles } from '../test/harness/media.js'
import { scratchDir } from '../test/harness/scratch.js'
import { Client, serviceEnvironment, startService } from '../test/e2e/service.js'
import { requestOperationCounts, type OperationCounts } from './mongo-operation-count.js'
import { benchRun } from './bench-run.js'
import { printTable } from './table.js'

const COMMANDS = Number(process.env.BENCH_COMMANDS ?? 20)
const POLL_MS = Number(process.env.BENCH_POLL_MS ?? 50)
const ENTRY = resolve(process.env.BENCH_ENTRY ?? 'dist/api/main.js')

/**
 * What a command needs of the store at the least, in this design (the record
 * is the outbox: docs/architecture/dispatch.md): its insert, the claim of its
 * hand-off, and the write of its end; and one read for each GET that finds it
 * unfinished (a finished one is served from the process's cache).
 */
const MINIMAL = { insert: 1, findAndModify: 1, update: 1 }

const { t, run } = benchRun()

function print(row: Record<string, unknown>): void {
  process.stdout.write(`${JSON.stringify(row)}\n`)
}

/** Per command, rounded to hundredths: `after` less `before`, less `idle` (if given), each divided by `commands`. */
function perCommand(before: OperationCounts, after: OperationCounts, commands: number, idle: OperationCounts = {}): Record<string, number> {
  const rows: Record<string, number> = {}
  for (const key of Object.keys(after).sort()) {
    const n = (after[key]! - (before[key] ?? 0) - (idle[key] ?? 0)) / commands
    if (Math.abs(n) >= 0.005) rows[key] = Math.round(n * 100) / 100
  }
  return rows
}

/** `find commands` → by kind: `find`. */
function byKind(rows: Record<string, number>): Record<string, number> {
  const kinds: Record<string, number> = {}
  for (const [key, n] of Object.entries(rows)) {
    const kind = key.slice(0, key.indexOf(' '))
    kinds[kind] = Math.round(((kinds[kind] ?? 0) + n) * 100) / 100
  }
  return kinds
}

function total(rows: Record<string, number>): number {
  return Math.round(Object.values(rows).reduce((sum, n) => sum + n, 0) * 100) / 100
}

/** The difference of two counts (what happened in between). */
function difference(before: OperationCounts, after: OperationCounts): OperationCounts {
  return Object.fromEntries(Object.entries(after).map(([key, n]) => [key, n - (before[key] ?? 0)]))
}

/** Submits one remux and GETs it every POLL_MS until it is terminal; the number of GETs. */
async function remux(api: Client, input: string): Promise<number> {
  const { command_id } = (await api.post('/run-ffmpeg-command', {
    input_files: { in_v: input },
    output_files: { out_x: 'remux.mp4' },
    ffmpeg_command: 'ffmpeg -i {{in_v}} -c copy {{out_x}}',
  })) as { command_id: string }
  for (let gets = 1; ; gets++) {
    const { status, body } = await api.request('GET', `/commands/${command_id}`)
    if (status === 200 && body.status === 'SUCCESS') return gets
    if (status !== 200 || body.status === 'FAILED') throw new Error(`command ${command_id}: ${status} ${JSON.stringify(body)}`)
    await new Promise((resolve) => setTimeout(resolve, POLL_MS))
  }
}

async function main(): Promise<void> {
  const dir = await scratchDir(t, 'ffkube-bench-')
  const operationsFile = join(dir, 'mongodb-operations.json')
  const environment = await serviceEnvironment(t, {
    LOG_LEVEL: 'error',
    NODE_OPTIONS: `--import=${join(dirname(ENTRY), '..', 'bench', 'mongo-operation-count.js')}`,
    FFKUBE_BENCH_MONGODB_OPERATIONS: operationsFile,
  })
  const [service, clip] = await Promise.all([startService(t, environment, ENTRY), makeClip(join(dir, 'clip.mp4'), { seconds: 1, width: 320, height: 240 })])
  const media = await serveFiles(t, [clip])
  const api = new Client(service)
  const counts = () => requestOperationCounts(service.child, operationsFile)
  print({ phase: 'machine', entry: ENTRY, cores: availableParallelism(), load_average: loadavg().map((n) => Math.round(n * 100) / 100), commands: COMMANDS, poll_ms: POLL_MS })

  // The first command fills the caches (the key, the plan) and warms a runner.
  await remux(api, media.url(clip))
  const before = await counts()
  const started = performance.now()
  let gets = 0
  for (let i = 0; i < COMMANDS; i++) gets += await remux(api, media.url(clip))
  const elapsed = performance.now() - started
  // Settled: what follows an end (the webhook deliverer's read, the run's end) is written by then.
  await new Promise((resolve) => setTimeout(resolve, 1_000))
  const after = await counts()
  const idle = await idleCounts(counts, elapsed + 1_000)

  const raw = perCommand(before, after, COMMANDS)
  const own = perCommand(before, after, COMMANDS, idle)
  print({ phase: 'store operations per command, raw', total: total(raw), gets_per_command: Math.round((gets / COMMANDS) * 100) / 100, ...raw })
  print({ phase: 'store operations of the idle loops over as long, per command', total: total(perCommand({}, idle, COMMANDS)), ...perCommand({}, idle, COMMANDS) })
  print({ phase: 'store operations per command, own (raw less idle)', total: total(own), ...own })
  // A GET of an unfinished command reads its record once (poll-reads.ts); these are the command's own operations without them.
  const withoutGets = { ...own, 'find commands': Math.round(((own['find commands'] ?? 0) - gets / COMMANDS) * 100) / 100 }
  print({ phase: 'store operations per command, own, less one find commands per GET', total: total(withoutGets), ...withoutGets })
  print({ phase: 'by kind, own', ...byKind(own) })
  print({ phase: 'minimal design (insert, claim, terminal write; + 1 find per GET of an unfinished command)', total: total(MINIMAL), ...MINIMAL })
  const kinds = byKind(own)
  printTable([
    ...Object.entries(kinds).map(([kind, n]): [string, string, string] => [`${kind} per command`, n.toFixed(2), String(MINIMAL[kind as keyof typeof MINIMAL] ?? (kind === 'find' ? '1 per unfinished GET' : 0))]),
    ['all per command (own)', total(own).toFixed(2), `${total(MINIMAL)} + GETs`],
    ['all per command (own), less one find per GET', total(withoutGets).toFixed(2), String(total(MINIMAL))],
    ['GETs per command', (gets / COMMANDS).toFixed(2), ''],
  ])
}

/** The operations the service's loops send while nothing is submitted, over `ms`. */
async function idleCounts(counts: () => Promise<OperationCounts>, ms: number): Promise<OperationCounts> {
  const before = await counts()
  await new Promise((resolve) => setTimeout(resolve, ms))
  return difference(before, await counts())
}

void run(main)
