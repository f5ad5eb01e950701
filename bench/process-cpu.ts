/**
 * CPU time by process, for benchmarks that ask where a command's cost goes:
 * reads utime + stime from /proc/<pid>/stat of a root and the processes
 * under it, groups them by what they run, and gives the difference between
 * two readings. The tools (ffmpeg, ffprobe, and the prlimit and bwrap around
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
  if (/runner-image\/runner\/(main|pool-worker)\.js/.test(cmdline)) return 'runner'
  if (/api\/main\.js|unpoliced-service/.test(cmdline)) return 'service'
  if (/ferretdb/.test(cmdline)) return 'ferretdb'
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

/** Leaves the group made by accountAll and removes it (the processes started in it must have exited). */
export function stopAccounting(root = '/sys/fs/cgroup/cpuacct'): void {
  if (!accounting) return
  try {
    writeFileSync(join(root, 'cgroup.procs'), String(process.pid))
    rmdirSync(accounting)
  } catch {
    // Left behind: an empty group, harmless.
  }
  accounting = null
}

/** One reading of `root` and every process under it, by group (`bench` for the root). */
export async function readCpu(root: number): Promise<CpuByGroup> {
  const totals: CpuByGroup = {}
  const pending = [root]
  const usage = accounting ? Number(readFileSync(join(accounting, 'cpuacct.usage'), 'utf8')) / 1e6 : null
  for (let pid = pending.pop(); pid !== undefined; pid = pending.pop()) {
    const [stat, cmdline] = await Promise.all([readFile(`/proc/${pid}/stat`, 'utf8').catch(() => ''), readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')])
    if (!stat) continue
    // Fields after the command name (which may hold spaces), from field 3: utime is 14, stime 15, cutime 16, cstime 17.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    const own = (Number(fields[11]) + Number(fields[12])) * TICK_MS
    const group = pid === root ? 'bench' : groupOf(cmdline.replaceAll('\0', ' '))
    totals[group] = (totals[group] ?? 0) + own
    // The servers start nothing; the service starts runners, and they start tools.
    if (pid === root || group === 'service' || group === 'runner') pending.push(...(await children(pid)))
  }
  // What the group used beyond the live processes: the tools, and whatever else came and went (the live tools' own time is in both).
  if (usage !== null) totals.tools = usage - Object.entries(totals).reduce((sum, [group, ms]) => sum + (group === 'tools' ? 0 : ms), 0)
  return totals
}

/** CPU ms per command by group between two readings, busiest first; the bench's own process is `bench`. */
export function cpuPerCommand(before: CpuByGroup, after: CpuByGroup, commands: number): Array<[string, number]> {
  return Object.entries(after)
    .map(([group, ms]): [string, number] => [group, Math.round((ms - (before[group] ?? 0)) / commands)])
    .sort((a, b) => b[1] - a[1])
}
