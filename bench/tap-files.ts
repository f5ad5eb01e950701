/**
 * What `npm test`'s tap costs per way of running its files (issue 30): the
 * same test files run by tap as TypeScript through ts-node (`npx tap
 * test/….ts`, npm test before), as the JavaScript tsc compiled
 * (`dist/test/….js`, with tap's ts-node off), and compiled with two files at
 * a time. The variants take turns inside each round, and every other round
 * runs them in reverse order, so the machine's load falls on each.
 *
 * For each run: wall seconds, CPU seconds of the whole tap process tree
 * (a cgroup v1 cpuacct group of its own, so servers a test leaves to exit
 * after tap count too; else the reaped children's rusage), the share of the
 * machine's two cores busy meanwhile (/proc/stat, every process on the host),
 * the load average before, and tap's pass/fail counts.
 *
 *   npm run -s bench -- tap-files        (BENCH_TESTS, files and folders under
 *       test/, default "test/api test/unit"; BENCH_SKIP, files left out,
 *       default test/api/openapi-fuzz.test.ts; BENCH_LIMIT, the first N files;
 *       BENCH_ROUNDS, default 1; BENCH_VARIANTS, default ts-node,compiled,compiled-jobs2)
 */
import { spawn } from 'node:child_process'
import { mkdirSync, readdirSync, readFileSync, rmdirSync, statSync, unlinkSync } from 'node:fs'
import { loadavg } from 'node:os'
import { join } from 'node:path'
import { compiledTestFile } from '../scripts/test-phases.js'

const VARIANTS = {
  'ts-node': (files: string[]) => ['--jobs=1', ...files],
  compiled: (files: string[]) => ['--type-strip-only', '--jobs=1', ...files.map(compiledTestFile)],
  'compiled-jobs2': (files: string[]) => ['--type-strip-only', '--jobs=2', ...files.map(compiledTestFile)],
} satisfies Record<string, (files: string[]) => string[]>
type Variant = keyof typeof VARIANTS

interface Run {
  variant: Variant
  wallS: number
  cpuS: number
  busy: number
  load: number
  pass: number
  fail: number
  status: number | null
}

/** The .test.ts files under each path (a file or a folder), sorted. */
function testFiles(paths: string[], skip: Set<string>): string[] {
  const found = paths.flatMap((path) => statSync(path).isDirectory()
    ? readdirSync(path, { recursive: true, encoding: 'utf8' }).filter((name) => name.endsWith('.test.ts')).map((name) => join(path, name))
    : [path])
  return [...new Set(found)].filter((file) => !skip.has(file)).sort()
}

/** Busy and total jiffies of all CPUs so far (/proc/stat's first line). */
function cpuJiffies(): { busy: number; total: number } {
  const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number)
  const idle = fields[3]! + fields[4]! // idle + iowait
  const total = fields.reduce((a, b) => a + b, 0)
  return { busy: total - idle, total }
}

const CPUACCT = '/sys/fs/cgroup/cpuacct'

/** A cpuacct group for one run, or null when the host offers none (then rusage counts). */
function accountingGroup(name: string): string | null {
  try {
    const dir = join(CPUACCT, name)
    mkdirSync(dir)
    return dir
  } catch {
    return null
  }
}

async function runTap(variant: Variant, files: string[], index: number): Promise<Run> {
  const group = accountingGroup(`ffkube-tap-files-${process.pid}-${index}`)
  const load = loadavg()[0]!
  const before = cpuJiffies()
  const started = process.hrtime.bigint()
  // The shell joins the group before tap starts, so the whole tree is in it; `times` gives the
  // reaped children's CPU for a host without the group.
  const enter = group ? `echo $$ > ${group}/cgroup.procs; ` : ''
  const script = `${enter}npx --no-install tap "$@" > "$TAP_FILES_LOG" 2>&1; status=$?; times >&3; exit $status`
  const log = `/tmp/tap-files-${process.pid}-${index}.log`
  const child = spawn('bash', ['-c', script, 'tap', ...VARIANTS[variant](files)], { stdio: ['ignore', 'inherit', 'inherit', 'pipe'], env: { ...process.env, TAP_FILES_LOG: log } })
  let timesOutput = ''
  child.stdio[3]!.on('data', (chunk: Buffer) => (timesOutput += chunk.toString('utf8')))
  const status = await new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)))
  const wallS = Number(process.hrtime.bigint() - started) / 1e9
  const after = cpuJiffies()
  let cpuS: number
  if (group) {
    cpuS = Number(readFileSync(join(group, 'cpuacct.usage'), 'utf8')) / 1e9
    try {
      rmdirSync(group)
    } catch {
      // A process a test left behind is still in it: an empty group later, harmless.
    }
  } else {
    // `times`' second line: the children's user and system time, "0m12.345s 0m1.234s".
    const [user, sys] = (timesOutput.trim().split('\n')[1] ?? '').split(' ').map((t) => {
      const m = /(\d+)m([\d.]+)s/.exec(t)
      return m ? Number(m[1]) * 60 + Number(m[2]) : NaN
    })
    cpuS = user! + sys!
  }
  const output = readFileSync(log, 'utf8')
  // A failed run's output is kept to read; a passing one's is not.
  if (status === 0) unlinkSync(log)
  else console.log(`${variant}: tap exited ${status}; its output is in ${log}`)
  const summary = /^# \{ total: \d+(?:, pass: (\d+))?(?:, fail: (\d+))?/m.exec(output)
  return {
    variant, wallS, cpuS, load, status,
    busy: (after.busy - before.busy) / (after.total - before.total),
    pass: Number(summary?.[1] ?? 0), fail: Number(summary?.[2] ?? 0),
  }
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor((values.length - 1) / 2)]!

const paths = (process.env.BENCH_TESTS ?? 'test/api test/unit').split(/[\s,]+/).filter(Boolean)
const skip = new Set((process.env.BENCH_SKIP ?? 'test/api/openapi-fuzz.test.ts').split(/[\s,]+/).filter(Boolean))
const limit = Number(process.env.BENCH_LIMIT ?? Infinity)
const rounds = Number(process.env.BENCH_ROUNDS ?? 1)
const variants = (process.env.BENCH_VARIANTS ?? 'ts-node,compiled,compiled-jobs2').split(',') as Variant[]
for (const variant of variants) if (!(variant in VARIANTS)) throw new Error(`BENCH_VARIANTS: no variant ${variant} (${Object.keys(VARIANTS).join(', ')})`)
const files = testFiles(paths, skip).slice(0, limit)
console.log(`tap-files: ${files.length} files (${files[0]} … ${files.at(-1)}), ${rounds} round(s) of ${variants.join(', ')}`)

const runs: Run[] = []
for (let round = 0; round < rounds; round++) {
  for (const variant of round % 2 === 0 ? variants : [...variants].reverse()) {
    const run = await runTap(variant, files, runs.length)
    runs.push(run)
    console.log(`round ${round + 1} ${variant.padEnd(15)} wall ${run.wallS.toFixed(1).padStart(6)} s  cpu ${run.cpuS.toFixed(1).padStart(6)} s  cores busy ${(run.busy * 100).toFixed(0).padStart(3)} %  load before ${run.load.toFixed(1)}  pass ${run.pass} fail ${run.fail} exit ${run.status}`)
  }
}
console.log('\nvariant         | runs | wall s (median) | CPU s (median) | CPU s per file')
for (const variant of variants) {
  const mine = runs.filter((run) => run.variant === variant)
  const cpu = median(mine.map((run) => run.cpuS))
  console.log(`${variant.padEnd(15)} | ${String(mine.length).padStart(4)} | ${median(mine.map((run) => run.wallS)).toFixed(1).padStart(15)} | ${cpu.toFixed(1).padStart(14)} | ${(cpu / files.length).toFixed(2).padStart(14)}`)
}
