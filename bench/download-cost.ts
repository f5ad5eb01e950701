/**
 * What fetching one input costs the runner (run after `npx tsc`:
 * `npm run -s bench -- download-cost`): a child started with the runner's node
 * flags downloads a BENCH_MB (default 60, the multi-file bench's clip) file
 * from a loopback server in this process, BENCH_ROUNDS times (default 6, the
 * first not counted) with each way, the order reversed every round, and
 * prints its own CPU and the wall time, median [min–max]:
 *   guarded          contracts/url-guard-fetch.ts guardedDownload, as the runner fetches;
 *   default-buffers  the same pipeline with the streams' default 16 KiB marks
 *                    (guardedDownload until 2026-11-27), told here on its own.
 */
import { spawn } from 'node:child_process'
import { createReadStream } from 'node:fs'
import { writeFile } from 'node:fs/promises'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { loadavg } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { RUNNER_NODE_FLAGS } from '../contracts/runner-node-flags.js'
import { scratchDir } from '../test/harness/scratch.js'
import { benchRun } from './bench-run.js'

const MB = Number(process.env.BENCH_MB ?? 60)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 6)
const { t, run } = benchRun()

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number
const spread = (values: number[]) => `${median(values).toFixed(0)} [${Math.min(...values).toFixed(0)}–${Math.max(...values).toFixed(0)}]`

await run(async () => {
  const dir = await scratchDir(t, 'ffkube-bench-download-')
  const source = join(dir, 'input.bin')
  await writeFile(source, Buffer.alloc(MB * 1e6, 7))
  // 1 MiB reads, as the multi-file bench's media server (test/harness/media.ts).
  const server = createServer((_req, res) => createReadStream(source, { highWaterMark: 1024 * 1024 }).pipe(res.writeHead(200, { 'content-length': MB * 1e6 })))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()) }))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/input.bin`
  const child = spawn(process.execPath, [...RUNNER_NODE_FLAGS, join(import.meta.dirname, 'download-cost-child.js')], { env: { ...process.env, BENCH_URL: url, BENCH_OUT: join(dir, 'copy.bin') }, stdio: ['pipe', 'pipe', 'inherit'] })
  const answers = createInterface({ input: child.stdout })[Symbol.asyncIterator]()
  const seen = new Map<string, Array<{ cpu: number; wall: number }>>([['guarded', []], ['default-buffers', []]])
  const loads: number[] = []
  for (let round = 0; round < ROUNDS; round++) {
    for (const variant of round % 2 === 0 ? [...seen.keys()] : [...seen.keys()].reverse()) {
      child.stdin.write(`${variant}\n`)
      const answer = await answers.next()
      if (answer.done) throw new Error('the child exited')
      const { cpuMs, wallMs } = JSON.parse(answer.value as string) as { cpuMs: number; wallMs: number }
      if (round > 0) seen.get(variant)?.push({ cpu: cpuMs, wall: wallMs })
    }
    loads.push(loadavg()[0] as number)
  }
  console.log(`\n${MB} MB over loopback, ${ROUNDS - 1} rounds counted; load average ${Math.min(...loads).toFixed(1)}–${Math.max(...loads).toFixed(1)}`)
  console.log('variant         | runner CPU ms   | wall ms')
  for (const [variant, rows] of seen) console.log(`${variant.padEnd(15)} | ${spread(rows.map((r) => r.cpu)).padEnd(15)} | ${spread(rows.map((r) => r.wall))}`)
  const exited = new Promise((resolve) => child.once('exit', resolve))
  child.stdin.end()
  await exited
})
