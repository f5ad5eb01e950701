/**
 * CPU profiles of a long-lived process cut into windows a benchmark chooses
 * (bench/multi-file.ts with BENCH_PROFILE_DIR): the process profiles itself
 * from its start (node:inspector, V8's sampling profiler), and each SIGUSR2
 * writes what was sampled since the last one as
 * `<dir>/<label>.<name>-<pid>.cpuprofile` and starts again. The label is
 * whatever the benchmark wrote in `<dir>/label` before signalling, so a
 * window that covers one command can be told from the idle gap before it.
 * `node --cpu-prof` cannot do this: it writes once, at a normal exit, and a
 * pool worker ends by SIGKILL (runner-image/runner/pool-worker.ts).
 */
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs'
import { Session } from 'node:inspector/promises'
import { join } from 'node:path'

/** Samples every this many microseconds: V8's default is 1000; finer sees more of a 1–2 ms PUT. */
const SAMPLING_INTERVAL_US = 500

/** Starts profiling this process; each SIGUSR2 closes a window into `dir`. */
export async function profileInWindows(dir: string, name: string): Promise<void> {
  const session = new Session()
  session.connect()
  await session.post('Profiler.enable')
  await session.post('Profiler.setSamplingInterval', { interval: SAMPLING_INTERVAL_US })
  await session.post('Profiler.start')
  let writing = Promise.resolve()
  process.on('SIGUSR2', () => {
    const label = readFileSync(join(dir, 'label'), 'utf8').trim() || 'unlabelled'
    writing = writing.then(async () => {
      const { profile } = await session.post('Profiler.stop')
      writeFileSync(join(dir, `${label}.${name}-${process.pid}.cpuprofile`), JSON.stringify(profile))
      await session.post('Profiler.start')
    })
  })
  // Only now may the benchmark signal this process: before its handler, SIGUSR2 would end it.
  writeFileSync(readyMarker(dir, process.pid), '')
}

/** The file a profiled process writes once a SIGUSR2 closes a window instead of ending it. */
function readyMarker(dir: string, pid: number): string {
  return join(dir, `ready-${pid}`)
}

/** Every profiled process under `root` (by its entry point's name), `root` included. */
function profiledUnder(root: number): number[] {
  const found: number[] = []
  const pending = [root]
  for (let pid = pending.pop(); pid !== undefined; pid = pending.pop()) {
    let cmdline = ''
    try {
      cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8')
    } catch {
      continue
    }
    if (/bench\/profiled-[a-z-]+\.js/.test(cmdline)) found.push(pid)
    for (const task of readdirSync(`/proc/${pid}/task`)) {
      const children = readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8').split(' ').filter(Boolean).map(Number)
      pending.push(...children)
    }
  }
  return found
}

/**
 * Closes the current window of every profiled process under `root`, naming
 * it `label`; resolves once each has written it (their files appear).
 */
export async function closeWindow(dir: string, root: number, label: string): Promise<void> {
  writeFileSync(join(dir, 'label'), label)
  // A warm runner still starting (a spare the pool just spawned) has no handler yet: it is left
  // out, and its first window, from its start, closes with the next one.
  const pids = profiledUnder(root).filter((pid) => existsSync(readyMarker(dir, pid)))
  for (const pid of pids) process.kill(pid, 'SIGUSR2')
  const expected = pids.map((pid) => ({ pid, pattern: new RegExp(`^${label}\\.[a-z-]+-${pid}\\.cpuprofile$`) }))
  for (let tries = 0; tries < 200; tries++) {
    const files = readdirSync(dir)
    // A worker killed meanwhile (a pool worker ends by SIGKILL) writes nothing more.
    if (expected.every(({ pid, pattern }) => files.some((file) => pattern.test(file)) || !existsSync(`/proc/${pid}`))) return
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
  throw new Error(`the profiles of window ${label} were not written`)
}
