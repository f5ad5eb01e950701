/**
 * Whether the start gate (runner-image/start-gate) still pays (run after `npx
 * tsc`: `node dist/bench/start-gate.js`, `BENCH_RUNS`, default 40,
 * `BENCH_FFPROBES`, colon-separated ffprobe paths, default the provisioned one):
 * the time from "ffmpeg has written the file" to "the probe's result", with
 * ffprobe started ahead and held at the gate (what the runner does) and
 * started only then (what it would do without the gate), bare (a runner pod)
 * and jailed as local mode jails it, alternating so both see the same load.
 */
import { mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { pino } from 'pino'
import { detectSandbox, toolsReadOnly } from '../api/executors/sandbox-host.js'
import { startGatePath, toolPath } from '../api/local/tools.js'
import { probeArgs } from '../contracts/media-probe.js'
import type { SandboxHost } from '../contracts/sandbox.js'
import { runTool, startGatedTool } from '../contracts/tool-process.js'
import { makeClip } from '../test/harness/media.js'
import { scratchDir } from '../test/harness/scratch.js'
import { percentile, printTable } from './table.js'

const teardowns: Array<() => unknown> = []
const t = { teardown: (fn: () => unknown) => teardowns.push(fn) }
const RUNS = Number(process.env.BENCH_RUNS ?? 40)
const FFPROBES = (process.env.BENCH_FFPROBES ?? toolPath('ffprobe')).split(':')

async function main(): Promise<void> {
  const gateLibrary = startGatePath()
  const detected = detectSandbox(toolsReadOnly(FFPROBES, [gateLibrary]), pino({ level: 'warn' }))
  const host = detected.level === 'bwrap' ? (detected.host as SandboxHost) : null
  const dir = await scratchDir(t, 'ffkube-bench-gate-')
  const workDir = join(dir, 'work')
  await mkdir(workDir)
  await makeClip(join(workDir, 'clip.mp4'), { seconds: 4 })
  const args = probeArgs('clip.mp4')
  const rows: Array<[string, string, string]> = []
  for (const ffprobe of FFPROBES) {
    for (const jailed of host ? [false, true] : [false]) {
      const sandbox = jailed ? { host, network: 'none' as const } : undefined
      const samples = { gated: [] as number[], ungated: [] as number[] }
      for (let i = 0; i < RUNS + 3; i++) {
        for (const kind of i % 2 === 0 ? (['gated', 'ungated'] as const) : (['ungated', 'gated'] as const)) {
          let ms: number
          if (kind === 'gated') {
            const held = startGatedTool(ffprobe, args, { cwd: workDir, timeoutMs: 30_000, gateLibrary, sandbox })
            // ffmpeg's run, during which the held ffprobe has linked and waits.
            await sleep(150)
            const run = await held.open()
            if (!run || run.code !== 0) throw new Error(`gated ${ffprobe} did not hold or failed: ${run?.stderr}`)
            ms = run.seconds * 1000
          } else {
            const run = await runTool(ffprobe, args, { cwd: workDir, timeoutMs: 30_000, sandbox })
            if (run.code !== 0) throw new Error(`${ffprobe} exited ${run.code}: ${run.stderr}`)
            ms = run.seconds * 1000
          }
          if (i >= 3) samples[kind].push(ms)
        }
      }
      const gated = samples.gated.sort((a, b) => a - b)
      const ungated = samples.ungated.sort((a, b) => a - b)
      const name = `${ffprobe} ${jailed ? 'jailed' : 'bare'}`
      rows.push([`${name}: gated median / p90`, `${percentile(gated, 50).toFixed(1)} / ${percentile(gated, 90).toFixed(1)} ms`, ''])
      rows.push([`${name}: ungated median / p90`, `${percentile(ungated, 50).toFixed(1)} / ${percentile(ungated, 90).toFixed(1)} ms`, ''])
      rows.push([`${name}: what the gate saves (median)`, `${(percentile(ungated, 50) - percentile(gated, 50)).toFixed(1)} ms`, ''])
    }
  }
  printTable(rows)
}

main()
  .catch((err: unknown) => {
    console.error(err)
    process.exitCode = 1
  })
  .finally(async () => {
    for (const fn of teardowns.reverse()) await fn()
  })
