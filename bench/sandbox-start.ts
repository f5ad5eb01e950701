/**
 * What the sandbox costs a tool's start (run after `npx tsc`:
 * `npm run -s bench -- sandbox-start`, `BENCH_RUNS`, default 60): `ffmpeg
 * -version` and an ffprobe of a 1 s clip, bare and jailed as local mode
 * jails them (contracts/sandbox.ts through contracts/tool-process.ts, the
 * host found by api/executors/sandbox-host.ts), alternating so both see the
 * same load. Prints each one's median and p90 wall time and the difference.
 */
import { mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import { pino } from 'pino'
import { detectSandbox, toolsReadOnly } from '../api/executors/sandbox-host.js'
import { toolPath } from '../api/local/tools.js'
import type { SandboxHost } from '../contracts/sandbox.js'
import { runTool } from '../contracts/tool-process.js'
import { makeClip } from '../test/harness/media.js'
import { scratchDir } from '../test/harness/scratch.js'
import { percentile, printTable } from './table.js'

const teardowns: Array<() => unknown> = []
const t = { teardown: (fn: () => unknown) => teardowns.push(fn) }
const RUNS = Number(process.env.BENCH_RUNS ?? 60)

async function main(): Promise<void> {
  const ffmpeg = toolPath('ffmpeg')
  const ffprobe = toolPath('ffprobe')
  const detected = detectSandbox(toolsReadOnly([ffmpeg, ffprobe]), pino({ level: 'warn' }))
  if (detected.level !== 'bwrap') throw new Error(`no bwrap here: ${detected.reason}`)
  const host = detected.host as SandboxHost
  const dir = await scratchDir(t, 'ffkube-bench-sandbox-')
  const workDir = join(dir, 'work')
  await mkdir(workDir)
  await makeClip(join(workDir, 'clip.mp4'), { seconds: 1 })

  const cases: Array<[string, string, string[]]> = [
    ['ffmpeg -version', ffmpeg, ['-version']],
    ['ffprobe of a 1 s clip', ffprobe, ['-v', 'error', '-show_format', '-show_streams', '-of', 'json', 'clip.mp4']],
  ]
  const rows: Array<[string, string, string]> = []
  for (const [name, program, args] of cases) {
    const samples = { bare: [] as number[], jailed: [] as number[] }
    for (let i = 0; i < RUNS + 3; i++) {
      for (const kind of i % 2 === 0 ? (['bare', 'jailed'] as const) : (['jailed', 'bare'] as const)) {
        const sandbox = kind === 'jailed' ? { host, network: 'none' as const } : undefined
        const run = await runTool(program, args, { cwd: workDir, timeoutMs: 30_000, sandbox })
        if (run.code !== 0) throw new Error(`${name} (${kind}) exited ${run.code}: ${run.stderr}`)
        // The first three of each are warm-up.
        if (i >= 3) samples[kind].push(run.seconds * 1000)
      }
    }
    const bare = samples.bare.sort((a, b) => a - b)
    const jailed = samples.jailed.sort((a, b) => a - b)
    rows.push([`${name}: bare median / p90`, `${percentile(bare, 50).toFixed(1)} / ${percentile(bare, 90).toFixed(1)} ms`, ''])
    rows.push([`${name}: jailed median / p90`, `${percentile(jailed, 50).toFixed(1)} / ${percentile(jailed, 90).toFixed(1)} ms`, ''])
    rows.push([`${name}: sandbox cost (median difference)`, `${(percentile(jailed, 50) - percentile(bare, 50)).toFixed(1)} ms`, 'small'])
  }
  printTable(rows)
}

main()
  .catch((error: unknown) => {
    console.error(error)
    process.exitCode = 1
  })
  .finally(async () => {
    for (const teardown of teardowns.reverse()) await teardown()
  })
