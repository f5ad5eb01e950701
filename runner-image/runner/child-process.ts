/**
 * Runs a tool (ffmpeg, ffprobe, yt-dlp) the one way the runner allows: no
 * shell, a given cwd, an environment holding PATH only — no credential, token
 * or proxy setting of the runner reaches the tool — and a deadline after which
 * the tool is killed.
 */
import { spawn } from 'node:child_process'

export interface ToolRun {
  code: number | null
  signal: NodeJS.Signals | null
  timedOut: boolean
  stdout: string
  /** The last `stderrLimit` characters of stderr. */
  stderr: string
  /** Wall-clock seconds from spawn to exit. */
  seconds: number
}

export interface ToolOptions {
  cwd: string
  timeoutMs: number
  /** Receives stdout as it arrives (e.g. `-progress` lines); stdout is then not kept. */
  onStdout?: (chunk: string) => void
  /** Sees stderr as it arrives, besides the kept tail. */
  onStderr?: (chunk: string) => void
  stderrLimit?: number
  now?: () => number
}

/** The whole environment a tool gets. */
export function toolEnvironment(): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin', LANG: 'C.UTF-8' }
}

export function runTool(program: string, args: readonly string[], options: ToolOptions): Promise<ToolRun> {
  const now = options.now ?? (() => performance.now())
  const limit = options.stderrLimit ?? 8000
  const started = now()
  return new Promise((resolve, reject) => {
    const child = spawn(program, args, { cwd: options.cwd, env: toolEnvironment(), stdio: ['ignore', 'pipe', 'pipe'], shell: false })
    let stdout = ''
    let stderr = ''
    let timedOut = false
    const timer = setTimeout(() => {
      timedOut = true
      child.kill('SIGKILL')
    }, options.timeoutMs)
    child.stdout.setEncoding('utf8')
    child.stderr.setEncoding('utf8')
    child.stdout.on('data', (chunk: string) => {
      if (options.onStdout) options.onStdout(chunk)
      else stdout += chunk
    })
    child.stderr.on('data', (chunk: string) => {
      options.onStderr?.(chunk)
      stderr = (stderr + chunk).slice(-limit)
    })
    child.once('error', (error) => {
      clearTimeout(timer)
      reject(error)
    })
    child.once('close', (code, signal) => {
      clearTimeout(timer)
      resolve({ code, signal, timedOut, stdout, stderr, seconds: (now() - started) / 1000 })
    })
  })
}
