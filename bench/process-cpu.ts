/**
 * CPU time by process, for benchmarks that ask where a command's cost goes:
 * samples utime + stime from /proc/<pid>/stat of a root and the processes
 * under it, groups them by what they run, and gives what each group used
 * between start and stop. The tools (ffmpeg, ffprobe, and the prlimit and bwrap around
 * them) live too short to be sampled, and bwrap does not wait for its child,
 * so their time never reaches the runner's reaped-children time either: it
 * is counted as what is left of a cgroup v1 `cpuacct` group that the root
 * joins before it starts anything (accountAll), once the processes still
 * alive are taken out. Without that group (no cgroup v1, not root) `tools`
 * is absent.
 */
import { mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'

/** Milliseconds of CPU by group. */
export type CpuByGroup = Record<string, number>

const TICK_MS = 10 // USER_HZ is 100 on Linux.

async function children(pid: number): Promise<number[]> {
  const tasks = await readFile(`/proc/${pid}/task/${pid}/children`, 'utf8').catch(() => '')
  return tasks.split(' ').filter(Boolean).map(Number)
}

/** What a process is, for grouping: by its command line. */
function groupOf(cmdline: string): string {
  if (/runner-image\/runner\/(main|pool-worker)\.js|profiled-pool-worker/.test(cmdline)) return 'runner'
  if (/api\/main\.js|unpoliced-service|profiled-service/.test(cmdline)) return 'service'
  if (/ferretdb/.test(cmdline)) return 'ferretdb'
  if (/\bversitygw\b/.test(cmdline)) return 'versitygw'
  if (/\bminio\b/.test(cmdline)) return 'minio'
  if (/nats-server/.test(cmdline)) return 'nats'
  if (/ffmpeg|ffprobe|bwrap|prlimit/.test(cmdline)) return 'tools'
  return 'other'
}

let accounting: string | null = null

/**
 * Puts this process (and so everything it starts from now on) in a cpuacct
 * group of its own; false when the host has none to offer. Call before
 * starting anything.
 */
export function accountAll(root = '/sys/fs/cgroup/cpuacct'): boolean {
  try {
    const dir = join(root, `ffkube-bench-${process.pid}`)
    mkdirSync(dir, { recursive: true })
    writeFileSync(join(dir, 'cgroup.procs'), String(process.pid))
    accounting = dir
    return true
  } catch {
    return false
  }
}

/**
 * Leaves the group made by accountAll and removes it; a process started in it
 * that is still exiting keeps it a moment, so this tries for a second.
 */
export async function stopAccounting(root = '/sys/fs/cgroup/cpuacct'): Promise<void> {
  if (!accounting) return
  const dir = accounting
  accounting = null
  try {
    writeFileSync(join(root, 'cgroup.procs'), String(process.pid))
  } catch {
    return
  }
  for (let attempt = 0; attempt < 10; attempt++) {
    try {
      rmdirSync(dir)
      return
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
  }
  // Left behind: an empty group, harmless.
}

/**
 * The group of processes that are not the measured ones: another service and
 * its servers, idle beside the one measured (bench/multi-file.ts alternating a
 * baseline). Counted apart so they land in no group and not in `tools`.
 */
export const ASIDE = 'aside'

/** Own CPU ms and group of every process under `root` (itself included, as `bench`) now; `aside` and what they started are ASIDE. */
async function sample(root: number, aside: ReadonlySet<number>): Promise<Map<number, { group: string; ms: number }>> {
  const seen = new Map<number, { group: string; ms: number }>()
  const pending: Array<[number, boolean]> = [[root, false]]
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    const [pid, underAside] = next
    const [stat, cmdline] = await Promise.all([readFile(`/proc/${pid}/stat`, 'utf8').catch(() => ''), readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')])
    if (!stat) continue
    // Fields after the command name (which may hold spaces), from field 3: utime is 14, stime 15.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    const isAside = underAside || aside.has(pid)
    const group = pid === root ? 'bench' : isAside ? ASIDE : groupOf(cmdline.replaceAll('\0', ' '))
    seen.set(pid, { group, ms: (Number(fields[11]) + Number(fields[12])) * TICK_MS })
    // The servers start nothing; the service starts runners, and they start tools.
    if (pid === root || isAside || group === 'service' || group === 'runner') pending.push(...(await children(pid)).map((child): [number, boolean] => [child, isAside]))
  }
  return seen
}

/** The processes `pid` started and that still run. */
export function childrenOf(pid: number): Promise<number[]> {
  return children(pid)
}

/**
 * Watches the CPU of `root` and every process under it until stop(), which
 * gives what each group used meanwhile. Sampled every `intervalMs`, so a
 * process that exits in between (a runner retired after its jobs) keeps what
 * it had used at its last sample; the tools are the cpuacct group's
 * remainder (accountAll), which also holds the little those exited
 * processes used after their last sample.
 */
export function watchCpu(root: number, intervalMs = 500, aside: ReadonlySet<number> = new Set()): { stop(): Promise<CpuByGroup> } {
  const first = new Map<number, number>()
  const last = new Map<number, { group: string; ms: number }>()
  const usage = () => (accounting ? Number(readFileSync(join(accounting, 'cpuacct.usage'), 'utf8')) / 1e6 : null)
  const usageBefore = usage()
  const take = async (initial: boolean) => {
    for (const [pid, reading] of await sample(root, aside)) {
      if (initial) first.set(pid, reading.ms)
      last.set(pid, reading)
    }
  }
  const started = take(true)
  const timer = setInterval(() => void started.then(() => take(false)), intervalMs)
  return {
    async stop() {
      clearInterval(timer)
      await started
      await take(false)
      const totals: CpuByGroup = {}
      for (const [pid, { group, ms }] of last) totals[group] = (totals[group] ?? 0) + ms - (first.get(pid) ?? 0)
      const after = usage()
      // Everything but the processes sampled as something else: the tools sampled (a tool started unjailed, bwrap
      // itself) are in the group's usage too, so they are not subtracted twice.
      if (usageBefore !== null && after !== null) {
        totals.tools = after - usageBefore - Object.entries(totals).reduce((sum, [group, ms]) => sum + (group === 'tools' ? 0 : ms), 0)
      }
      return totals
    },
  }
}

/** CPU ms per command by group, busiest first; the bench's own process is `bench`. */
export function cpuPerCommand(used: CpuByGroup, commands: number): Array<[string, number]> {
  return Object.entries(used)
    .map(([group, ms]): [string, number] => [group, Math.round((ms / commands) * 10) / 10])
    .sort((a, b) => b[1] - a[1])
}
