/**
 * What storing one object costs, by the way it is sent (run after `npx tsc`:
 * `npm run -s bench -- object-put-cost`). The multi-file bench's HLS ladder is
 * ~190 objects stored beside the encode, and on two cores every CPU second
 * spent beside ffmpeg slows it (docs/benchmarks/multi-file.md): this isolates
 * the storing. A child started with the runner's node flags
 * (bench/object-put-cost-child.ts) PUTs BENCH_FILES files of an HLS segment's
 * sizes to the test harness's S3 server, once per variant per round, the
 * variants' order reversed every round; printed: the child's CPU, the S3
 * server's CPU (from /proc) and the wall time, per object and in all,
 * median [min–max] over BENCH_ROUNDS (default 5).
 * BENCH_VARIANTS picks them (default all: see the child's list);
 * BENCH_NODE_FLAGS adds node flags to the child's (e.g. `--cpu-prof`).
 */
import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { readFile, writeFile } from 'node:fs/promises'
import { loadavg } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { RUNNER_NODE_FLAGS } from '../contracts/runner-node-flags.js'
import { startS3 } from '../test/harness/s3.js'
import { scratchDir } from '../test/harness/scratch.js'
import { benchRun } from './bench-run.js'

const FILES = Number(process.env.BENCH_FILES ?? 190)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5)
const VARIANTS = (process.env.BENCH_VARIANTS ?? 'buffer-signed,buffer-unsigned,sdk-lean,runner,stream,stream-crc32,runner-put').split(',')

const { t, run } = benchRun()

/** CPU ms of every process under this one but `except`, from /proc (USER_HZ 100). */
async function cpuOfOthers(except: number): Promise<number> {
  const children = (await readFile(`/proc/${process.pid}/task/${process.pid}/children`, 'utf8')).split(' ').filter(Boolean).map(Number)
  let ms = 0
  for (const pid of children.filter((pid) => pid !== except)) {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '')
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    if (stat) ms += (Number(fields[11]) + Number(fields[12])) * 10
  }
  return ms
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number
const spread = (values: number[], digits: number) => `${median(values).toFixed(digits)} [${Math.min(...values).toFixed(digits)}–${Math.max(...values).toFixed(digits)}]`

await run(async () => {
  const dir = await scratchDir(t, 'ffkube-bench-put-')
  // A 720p/480p/360p ladder's 1 s segments are ~60–400 kB; a few playlists are under 1 kB.
  const files = Array.from({ length: FILES }, (_, i) => ({ name: `seg_${i}.ts`, size: i % 60 === 0 ? 400 + i : 60_000 + ((i * 7919) % 340_000) }))
  for (const file of files) await writeFile(join(dir, file.name), randomBytes(file.size))
  await writeFile(join(dir, 'files.json'), JSON.stringify(files))
  const s3 = await startS3(t)
  const child = spawn(process.execPath, [...RUNNER_NODE_FLAGS, ...(process.env.BENCH_NODE_FLAGS ?? '').split(' ').filter(Boolean), join(import.meta.dirname, 'object-put-cost-child.js')], {
    env: { ...process.env, BENCH_DIR: dir, S3_ENDPOINT: s3.endpoint, S3_BUCKET: s3.bucket, S3_REGION: s3.region, S3_ACCESS_KEY_ID: s3.accessKeyId, S3_SECRET_ACCESS_KEY: s3.secretAccessKey },
    stdio: ['pipe', 'pipe', 'inherit'],
  })
  t.teardown(() => void child.kill())
  const answers = createInterface({ input: child.stdout })[Symbol.asyncIterator]()
  const seen = new Map<string, Array<{ client: number; server: number; wall: number }>>(VARIANTS.map((v) => [v, []]))
  const loads: number[] = []
  // A warm-up round, not counted: the SDK's first requests load and compile its code.
  for (const round of [-1, ...Array.from({ length: ROUNDS }, (_, i) => i)]) {
    for (const variant of round % 2 === 0 ? VARIANTS : [...VARIANTS].reverse()) {
      const serverBefore = await cpuOfOthers(child.pid as number)
      child.stdin.write(`${JSON.stringify({ variant, prefix: `${variant}/${round}` })}\n`)
      let answer = await answers.next()
      // Anything else the child prints (e.g. --trace-gc) goes to stderr.
      for (; !answer.done && !(answer.value as string).startsWith('{'); answer = await answers.next()) process.stderr.write(`${answer.value as string}\n`)
      if (answer.done) throw new Error('the child exited')
      const { cpuMs, wallMs } = JSON.parse(answer.value as string) as { cpuMs: number; wallMs: number }
      if (round >= 0) seen.get(variant)?.push({ client: cpuMs, server: (await cpuOfOthers(child.pid as number)) - serverBefore, wall: wallMs })
    }
    loads.push(loadavg()[0] as number)
  }
  const total = files.reduce((sum, file) => sum + file.size, 0)
  console.log(`\n${FILES} objects, ${(total / 1e6).toFixed(1)} MB, 4 at a time; ${ROUNDS} rounds; load average ${Math.min(...loads).toFixed(1)}–${Math.max(...loads).toFixed(1)}`)
  console.log('variant         | client CPU ms per object | server CPU ms per object | client CPU s, all | server CPU s, all | wall s, all')
  for (const [variant, rows] of seen) {
    const per = (pick: (row: { client: number; server: number; wall: number }) => number) => rows.map((row) => pick(row) / FILES)
    const all = (pick: (row: { client: number; server: number; wall: number }) => number) => rows.map((row) => pick(row) / 1000)
    console.log(
      [variant.padEnd(15), spread(per((r) => r.client), 2).padStart(24), spread(per((r) => r.server), 2).padStart(24), spread(all((r) => r.client), 2).padStart(17), spread(all((r) => r.server), 2).padStart(17), spread(all((r) => r.wall), 2).padStart(11)].join(' | '),
    )
  }
  // Let it end on its own, so a --cpu-prof child writes its profile.
  const exited = new Promise((resolve) => child.once('exit', resolve))
  child.stdin.end()
  await exited
})
