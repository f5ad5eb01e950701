/**
 * Where the CPU of profiled commands went (the windows bench/multi-file.ts
 * writes with BENCH_PROFILE_DIR): `node dist/bench/cpu-profile-summary.js DIR
 * [TOP]` sums every `*-command.<process>-<pid>.cpuprofile` of DIR by process
 * (service, runner) and prints, per command, the busy time by module (a
 * package of node_modules, a node: module, a file of ours), the functions
 * with the most self time, and our own functions by inclusive time.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'

interface ProfileNode {
  id: number
  callFrame: { functionName: string; url: string; lineNumber: number }
  children?: number[]
}
interface Profile {
  nodes: ProfileNode[]
  samples: number[]
  timeDeltas: number[]
}

const [dir, topArgument] = process.argv.slice(2)
if (!dir) throw new Error('usage: node dist/bench/cpu-profile-summary.js DIR [TOP]')
const top = Number(topArgument ?? 25)

/** Where a frame's code lives, coarsely. */
function moduleOf(url: string, functionName: string): string {
  if (['(idle)', '(garbage collector)', '(program)'].includes(functionName)) return functionName
  if (!url) return '(native)'
  const pkg = /node_modules\/((@[^/]+\/)?[^/]+)/.exec(url)
  if (pkg) return pkg[1] as string
  if (url.startsWith('node:')) return `node:${url.slice(5).split('/')[0] ?? ''}`
  return /dist\/(.*)$/.exec(url)?.[1] ?? url
}

const ours = /^(api|runner-image|contracts)\//

/** Adds one profile's microseconds to the tallies. */
function tally(profile: Profile, totals: { busy: number; byModule: Map<string, number>; bySelf: Map<string, number>; byInclusive: Map<string, number> }): void {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]))
  const parent = new Map<number, number>()
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id)
  const add = (map: Map<string, number>, key: string, us: number) => map.set(key, (map.get(key) ?? 0) + us)
  profile.samples.forEach((id, i) => {
    const us = profile.timeDeltas[i] ?? 0
    const frame = (byId.get(id) as ProfileNode).callFrame
    if (frame.functionName === '(idle)') return
    const module = moduleOf(frame.url, frame.functionName)
    totals.busy += us
    add(totals.byModule, module, us)
    add(totals.bySelf, `${frame.functionName || '(anonymous)'} ${module}:${frame.lineNumber + 1}`, us)
    const seen = new Set<string>()
    for (let current: number | undefined = id; current !== undefined; current = parent.get(current)) {
      const { functionName, url } = (byId.get(current) as ProfileNode).callFrame
      const key = `${functionName || '(anonymous)'} ${moduleOf(url, functionName)}`
      if (ours.test(moduleOf(url, functionName)) && !seen.has(key)) {
        seen.add(key)
        add(totals.byInclusive, key, us)
      }
    }
  })
}

const files = readdirSync(dir).filter((file) => /-command\.[a-z-]+-\d+\.cpuprofile$/.test(file))
const processes = [...new Set(files.map((file) => /-command\.([a-z-]+)-\d+\.cpuprofile$/.exec(file)?.[1] as string))].sort()
const commands = new Set(files.map((file) => file.split('.')[0])).size
for (const name of processes) {
  const totals = { busy: 0, byModule: new Map<string, number>(), bySelf: new Map<string, number>(), byInclusive: new Map<string, number>() }
  for (const file of files.filter((f) => f.includes(`-command.${name}-`))) tally(JSON.parse(readFileSync(join(dir, file), 'utf8')) as Profile, totals)
  const perCommand = (us: number) => `${(us / 1000 / commands).toFixed(1).padStart(8)} ms`
  console.log(`\n== ${name}: ${commands} commands, busy ${perCommand(totals.busy)} per command (sampled)`)
  for (const [title, map] of [['by module (self)', totals.byModule], ['by function (self)', totals.bySelf], ['our functions (inclusive)', totals.byInclusive]] as const) {
    console.log(`-- ${title}, per command`)
    for (const [key, us] of [...map].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${perCommand(us)}  ${key}`)
  }
}
