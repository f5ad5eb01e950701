import { access, readFile, readdir, rm, rmdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { run } from './run.js'

/** Sysctls the kubelet, kube-proxy, kube-router and the CNI bridge may change. */
export const WATCHED_SYSCTLS = [
  'vm.overcommit_memory',
  'vm.panic_on_oom',
  'kernel.panic',
  'kernel.panic_on_oops',
  'kernel.keys.root_maxkeys',
  'kernel.keys.root_maxbytes',
  'net.ipv4.ip_forward',
  'net.ipv4.conf.all.forwarding',
  'net.ipv4.conf.all.route_localnet',
  'net.ipv6.conf.all.forwarding',
  'net.bridge.bridge-nf-call-iptables',
  'net.bridge.bridge-nf-call-ip6tables',
  'net.bridge.bridge-nf-call-arptables',
  'net.netfilter.nf_conntrack_max',
  'net.netfilter.nf_conntrack_tcp_timeout_established',
  'net.netfilter.nf_conntrack_tcp_timeout_close_wait',
]

/** Host folders the node's components create whatever their configured roots. */
export const WATCHED_PATHS = [
  '/var/log/pods',
  '/var/log/containers',
  '/var/lib/kubelet',
  '/var/lib/kube-proxy',
  '/var/lib/kube-router',
  '/var/lib/containerd',
  '/var/lib/cni',
  '/usr/libexec/kubernetes',
  '/etc/cni',
  '/etc/kubernetes',
  '/opt/cni',
  '/opt/containerd',
  '/run/containerd',
  '/run/netns',
  '/run/nri',
  '/run/kube-router',
]

/** cgroup v1 controller folders the kubelet creates under each hierarchy. */
const WATCHED_CGROUPS = ['kubepods', 'kubepods.slice']

/** What the node changes on the host, recorded before it starts. */
export interface HostState {
  sysctls: Record<string, string>
  iptables: string
  ip6tables: string
  ipsets: string[]
  /** `nft list tables`: iptables-nft's tables and any native nftables ones. */
  nftTables: string[]
  /** IPv4 addresses on lo, as `a.b.c.d/len`. */
  loopback: string[]
  paths: Record<string, boolean>
  cgroups: Record<string, boolean>
}

function sysctlPath(name: string): string {
  return join('/proc/sys', ...name.split('.'))
}

async function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  )
}

async function cgroupDirs(): Promise<string[]> {
  const hierarchies = await readdir('/sys/fs/cgroup').catch(() => [] as string[])
  return hierarchies.flatMap((h) => WATCHED_CGROUPS.map((c) => join('/sys/fs/cgroup', h, c)))
}

/** Records the host state the node may change (see restoreHostState). */
export async function recordHostState(): Promise<HostState> {
  const sysctls: Record<string, string> = {}
  for (const name of WATCHED_SYSCTLS) {
    const value = await readFile(sysctlPath(name), 'utf8').catch(() => undefined)
    if (value !== undefined) sysctls[name] = value.trim()
  }
  const paths: Record<string, boolean> = {}
  for (const path of WATCHED_PATHS) paths[path] = await exists(path)
  const cgroups: Record<string, boolean> = {}
  for (const dir of await cgroupDirs()) cgroups[dir] = await exists(dir)
  return {
    sysctls,
    iptables: await run('iptables-save', []),
    ip6tables: await run('ip6tables-save', []),
    ipsets: (await run('ipset', ['list', '-n'])).split('\n').filter(Boolean),
    nftTables: await nftTables(),
    loopback: await loopbackAddresses(),
    paths,
    cgroups,
  }
}

async function loopbackAddresses(): Promise<string[]> {
  const out = await run('ip', ['-o', '-4', 'addr', 'show', 'dev', 'lo'])
  return [...out.matchAll(/ inet (\S+) /g)].map((m) => m[1] ?? '')
}

async function nftTables(): Promise<string[]> {
  return (await run('nft', ['list', 'tables'])).split('\n').filter(Boolean)
}

function tablesOf(save: string): Set<string> {
  return new Set([...save.matchAll(/^\*(\S+)$/gm)].map((m) => m[1] ?? ''))
}

/** The saved rules, plus an empty block for each table created since: restore flushes those. */
function restoreInput(saved: string, current: string): string {
  const savedTables = tablesOf(saved)
  const added = [...tablesOf(current)].filter((t) => !savedTables.has(t))
  return saved + added.map((t) => `*${t}\nCOMMIT\n`).join('')
}

/** cgroup folders are removed leaf first; a folder with live tasks stays (and is reported by diffHostState). */
async function removeCgroupTree(dir: string): Promise<void> {
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => [])
  for (const entry of entries) if (entry.isDirectory()) await removeCgroupTree(join(dir, entry.name))
  await rmdir(dir).catch(() => undefined)
}

/** Puts back what recordHostState saw; every step is attempted, errors are collected and thrown at the end. */
export async function restoreHostState(state: HostState): Promise<void> {
  const errors: string[] = []
  const attempt = async (what: string, fn: () => Promise<unknown>) => {
    try {
      await fn()
    } catch (err) {
      errors.push(`${what}: ${(err as Error).message}`)
    }
  }
  await attempt('iptables', async () => run('iptables-restore', [], { input: restoreInput(state.iptables, await run('iptables-save', [])) }))
  await attempt('ip6tables', async () => run('ip6tables-restore', [], { input: restoreInput(state.ip6tables, await run('ip6tables-save', [])) }))
  await attempt('nftables', async () => {
    for (const table of await nftTables()) {
      if (!state.nftTables.includes(table)) await run('nft', ['delete', ...table.split(' ').slice(1)])
    }
  })
  await attempt('ipsets', async () => {
    const now = (await run('ipset', ['list', '-n'])).split('\n').filter(Boolean)
    for (const set of now) if (!state.ipsets.includes(set)) await run('ipset', ['destroy', set])
  })
  await attempt('lo addresses', async () => {
    for (const address of await loopbackAddresses()) {
      if (!state.loopback.includes(address)) await run('ip', ['addr', 'del', address, 'dev', 'lo'])
    }
  })
  for (const [name, value] of Object.entries(state.sysctls)) {
    await attempt(`sysctl ${name}`, async () => {
      const now = (await readFile(sysctlPath(name), 'utf8')).trim()
      if (now !== value) await writeFile(sysctlPath(name), value)
    })
  }
  for (const [path, existed] of Object.entries(state.paths)) {
    if (!existed) await attempt(`remove ${path}`, () => rm(path, { recursive: true, force: true }))
  }
  for (const [dir, existed] of Object.entries(state.cgroups)) {
    if (!existed) await attempt(`remove ${dir}`, () => removeCgroupTree(dir))
  }
  if (errors.length > 0) throw new Error(`restoring the host failed:\n${errors.join('\n')}`)
}

function normalizedRules(save: string): string {
  return save
    .split('\n')
    .filter((line) => !line.startsWith('#'))
    .map((line) => line.replace(/\[\d+:\d+\]/, ''))
    .join('\n')
}

/** What differs between two recorded states, one line per difference; empty when the host is as it was. */
export function diffHostState(before: HostState, after: HostState): string[] {
  const diffs: string[] = []
  for (const [name, value] of Object.entries(before.sysctls)) {
    if (after.sysctls[name] !== value) diffs.push(`sysctl ${name}: ${value} -> ${after.sysctls[name]}`)
  }
  if (normalizedRules(before.iptables) !== normalizedRules(after.iptables)) diffs.push('iptables rules differ')
  if (normalizedRules(before.ip6tables) !== normalizedRules(after.ip6tables)) diffs.push('ip6tables rules differ')
  const sets = (s: string[]) => [...s].sort().join(',')
  if (sets(before.ipsets) !== sets(after.ipsets)) diffs.push(`ipsets: ${sets(before.ipsets)} -> ${sets(after.ipsets)}`)
  if (sets(before.loopback) !== sets(after.loopback)) diffs.push(`lo: ${sets(before.loopback)} -> ${sets(after.loopback)}`)
  if (sets(before.nftTables) !== sets(after.nftTables)) diffs.push(`nft tables: ${sets(before.nftTables)} -> ${sets(after.nftTables)}`)
  for (const [path, existed] of Object.entries(before.paths)) {
    if (after.paths[path] !== existed) diffs.push(`${path}: ${existed ? 'existed' : 'absent'} -> ${after.paths[path] ? 'exists' : 'absent'}`)
  }
  for (const [dir, existed] of Object.entries(before.cgroups)) {
    if (after.cgroups[dir] !== existed) diffs.push(`${dir}: ${existed ? 'existed' : 'absent'} -> ${after.cgroups[dir] ? 'exists' : 'absent'}`)
  }
  return diffs
}
