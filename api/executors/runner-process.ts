/**
 * One runner child process: `node dist/runner-image/runner/main.js --spec -
 * --work-dir DIR`, the spec on stdin (never on the command line), in its own
 * process group so a kill reaches the ffmpeg it started too.
 */
import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { CommandSpec } from '../../contracts/command-spec.js'
import { localRunnerNodeFlags } from '../../contracts/runner-node-flags.js'

/** The built runner: beside this file under dist/, or dist/ of the checkout when this runs from source (tests). */
export function defaultRunnerMain(): string {
  const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..')
  const built = join(root, 'runner-image', 'runner', 'main.js')
  return existsSync(built) ? built : join(root, 'dist', 'runner-image', 'runner', 'main.js')
}

export interface RunnerExit {
  code: number | null
  signal: NodeJS.Signals | null
  /** The last few KiB of the runner's own log (stderr), for the executor's log. */
  stderrTail: string
}

export interface RunnerProcess {
  pid: number
  exited: Promise<RunnerExit>
  /** Signals the whole process group (runner and its ffmpeg/yt-dlp). */
  kill(signal: NodeJS.Signals): void
}

export function startRunner(runnerMain: string, spec: CommandSpec, workDir: string, env: NodeJS.ProcessEnv): RunnerProcess {
  const child = spawn(process.execPath, [...localRunnerNodeFlags(), runnerMain, '--spec', '-', '--work-dir', workDir], {
    env,
    cwd: workDir,
    detached: true,
    stdio: ['pipe', 'ignore', 'pipe'],
  })
  let stderrTail = ''
  child.stderr.setEncoding('utf8')
  child.stderr.on('data', (chunk: string) => {
    stderrTail = (stderrTail + chunk).slice(-4096)
  })
  const exited = new Promise<RunnerExit>((resolve) => {
    child.once('error', () => resolve({ code: null, signal: null, stderrTail }))
    child.once('close', (code, signal) => resolve({ code, signal, stderrTail }))
  })
  child.stdin.on('error', () => undefined)
  child.stdin.end(JSON.stringify(spec))
  const pid = child.pid ?? -1
  return {
    pid,
    exited,
    kill: (signal) => {
      try {
        process.kill(-pid, signal)
      } catch {
        // Already gone.
      }
    },
  }
}
