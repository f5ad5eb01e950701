/**
 * Runs a tool (ffmpeg, ffprobe, yt-dlp) the one way ffkube allows, in the
 * runner and in the file processor alike: no shell, a given cwd, an
 * environment holding PATH only — no credential, token or proxy setting of
 * the caller reaches the tool — a deadline after which the tool is killed,
 * and, where the host has one, the sandbox (sandbox.ts) around it.
 */
import { spawn, type ChildProcess, type ChildProcessByStdio } from 'node:child_process'
import { resolve } from 'node:path'
import type { Readable, Writable } from 'node:stream'
import { sandboxedArgv, type SandboxHost, type SandboxNetwork } from './sandbox.js'
import { seccompProgram } from './seccomp-filter.js'

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
  /** The jail to start the tool in (cwd is its work dir); null or absent: none (a runner pod, whose pod is the jail). */
  sandbox?: { host: SandboxHost | null; network: SandboxNetwork; binds?: readonly string[] } | undefined
  /** Kills the tool (SIGKILL, as the deadline does) when aborted: the caller saw it go wrong, e.g. too many output files. */
  signal?: AbortSignal | undefined
}

/** The jail's seccomp filter, built once; null on an architecture it is not written for. */
const SECCOMP_PROGRAM = seccompProgram()

interface Launch {
  file: string
  argv: string[]
  env: NodeJS.ProcessEnv
  /** Bytes to write to descriptor `seccompFd` (a pipe) for bwrap to read; null: no filter. */
  seccomp: Buffer | null
}

/**
 * The program and argv to spawn: the tool itself, or the jail around it with
 * the seccomp filter on descriptor `seccompFd` (the first one the caller's
 * stdio leaves free).
 */
function launch(program: string, args: readonly string[], options: ToolOptions, seccompFd: number): Launch {
  const host = options.sandbox?.host
  if (!host) return { file: program, argv: [...args], env: toolEnvironment(), seccomp: null }
  const seccomp = host.bwrap ? SECCOMP_PROGRAM : null
  const binds = options.sandbox?.binds
  const run = { workDir: resolve(options.cwd), network: options.sandbox?.network ?? 'none', ...(binds ? { binds } : {}), ...(seccomp ? { seccompFd } : {}) }
  const [file, ...argv] = sandboxedArgv(host, run, program, args)
  return { file: file as string, argv, env: toolEnvironment(), seccomp }
}

/** Spawns a launch with `stdio`, plus the seccomp pipe after it, and hands bwrap the filter. */
function spawnLaunch(launched: Launch, cwd: string, stdio: Array<'ignore' | 'pipe'>): ChildProcess {
  const child = spawn(launched.file, launched.argv, { cwd, env: launched.env, stdio: launched.seccomp ? [...stdio, 'pipe'] : stdio, shell: false })
  if (launched.seccomp) {
    const pipe = child.stdio[stdio.length] as Writable
    pipe.on('error', () => undefined)
    pipe.end(launched.seccomp)
  }
  return child
}

/** The whole environment a tool gets. */
export function toolEnvironment(): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin', LANG: 'C.UTF-8' }
}

/** Gathers a tool's stdout (unless onStdout takes it) and the last `stderrLimit` characters of its stderr. */
function collectOutput(out: Readable, err: Readable, options: ToolOptions): { stdout(): string; stderr(): string } {
  const limit = options.stderrLimit ?? 8000
  let stdout = ''
  let stderr = ''
  out.setEncoding('utf8')
  err.setEncoding('utf8')
  out.on('data', (chunk: string) => {
    if (options.onStdout) options.onStdout(chunk)
    else stdout += chunk
  })
  err.on('data', (chunk: string) => {
    options.onStderr?.(chunk)
    stderr = (stderr + chunk).slice(-limit)
  })
  return { stdout: () => stdout, stderr: () => stderr }
}

/** Kills the tool when `ms` have passed. */
function killAfter(child: ChildProcess, ms: number): { timedOut(): boolean; clear(): void } {
  let timedOut = false
  const timer = setTimeout(() => {
    timedOut = true
    child.kill('SIGKILL')
  }, ms)
  return { timedOut: () => timedOut, clear: () => clearTimeout(timer) }
}

export function runTool(program: string, args: readonly string[], options: ToolOptions): Promise<ToolRun> {
  const now = options.now ?? (() => performance.now())
  const started = now()
  return new Promise((resolve, reject) => {
    const child = spawnLaunch(launch(program, args, options, 3), options.cwd, ['ignore', 'pipe', 'pipe']) as ChildProcessByStdio<null, Readable, Readable>
    const output = collectOutput(child.stdout, child.stderr, options)
    const deadline = killAfter(child, options.timeoutMs)
    const abort = () => child.kill('SIGKILL')
    if (options.signal?.aborted) abort()
    options.signal?.addEventListener('abort', abort, { once: true })
    child.once('error', (error) => {
      deadline.clear()
      options.signal?.removeEventListener('abort', abort)
      reject(error)
    })
    child.once('close', (code, signal) => {
      deadline.clear()
      options.signal?.removeEventListener('abort', abort)
      resolve({ code, signal, timedOut: deadline.timedOut(), stdout: output.stdout(), stderr: output.stderr(), seconds: (now() - started) / 1000 })
    })
  })
}
