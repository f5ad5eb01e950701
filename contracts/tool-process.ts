/**
 * Runs a tool (ffmpeg, ffprobe, yt-dlp) the one way ffkube allows, in the
 * runner and in the file processor alike: no shell, a given cwd, an
 * environment holding PATH only — no credential, token or proxy setting of
 * the caller reaches the tool — a deadline after which the tool is killed,
 * and, where the host has one, the sandbox (sandbox.ts) around it.
 */
import { spawn, type ChildProcess, type ChildProcessByStdio } from 'node:child_process'
import { resolve } from 'node:path'
import type { Duplex, Readable, Writable } from 'node:stream'
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
  sandbox?: { host: SandboxHost | null; network: SandboxNetwork } | undefined
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
 * `toolEnv` set inside and the seccomp filter on descriptor `seccompFd` (the
 * first one the caller's stdio leaves free).
 */
function launch(program: string, args: readonly string[], options: ToolOptions, seccompFd: number, toolEnv: Record<string, string> = {}): Launch {
  const host = options.sandbox?.host
  if (!host) return { file: program, argv: [...args], env: { ...toolEnvironment(), ...toolEnv }, seccomp: null }
  const seccomp = host.bwrap ? SECCOMP_PROGRAM : null
  const run = { workDir: resolve(options.cwd), network: options.sandbox?.network ?? 'none', toolEnv, ...(seccomp ? { seccompFd } : {}) }
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
    child.once('error', (error) => {
      deadline.clear()
      reject(error)
    })
    child.once('close', (code, signal) => {
      deadline.clear()
      resolve({ code, signal, timedOut: deadline.timedOut(), stdout: output.stdout(), stderr: output.stderr(), seconds: (now() - started) / 1000 })
    })
  })
}

/** A tool started ahead of its input and held by the start gate (runner-image/start-gate) until opened. */
export interface GatedTool {
  /**
   * Lets the tool run; resolves with its run (seconds counted from here), or
   * with null when the gate never held it (its library did not load, so the
   * tool ran at once, before its input was there): the caller then runs it
   * the ordinary way and ignores whatever this one did.
   */
  open(): Promise<ToolRun | null>
  /** Ends it unopened. */
  cancel(): void
  pid: number | undefined
}

/**
 * Starts `program` now with the start gate preloaded: it links its libraries
 * (most of an ffprobe's cost) and then waits before main() for open(). The
 * gate talks over descriptor 3: one byte "ready" from the tool, one byte "go"
 * to it. The environment is toolEnvironment()'s plus the two variables the
 * gate reads, which it removes before main(); in a sandbox they are set for
 * the tool only, so the gate holds the tool and not prlimit or bwrap.
 */
export function startGatedTool(program: string, args: readonly string[], options: ToolOptions & { gateLibrary: string }): GatedTool {
  const now = options.now ?? (() => performance.now())
  const child = spawnLaunch(launch(program, args, options, 4, { LD_PRELOAD: options.gateLibrary, FFKUBE_GATE_FD: '3' }), options.cwd, ['ignore', 'pipe', 'pipe', 'pipe'])
  // Piped, per stdio above: the typings cannot tell from a four-element array.
  const [, out, err, gate] = child.stdio as unknown as [null, Readable, Readable, Duplex]
  const output = collectOutput(out, err, options)
  let deadline: ReturnType<typeof killAfter> | null = null
  gate.on('error', () => undefined)
  const ready = new Promise<boolean>((resolve) => gate.once('data', () => resolve(true)))
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('error', () => resolve({ code: null, signal: null }))
    child.once('close', (code, signal) => resolve({ code, signal }))
  })
  const held = Promise.race([ready, exited.then(() => false)])
  return {
    async open() {
      if (!(await held)) return null
      const started = now()
      deadline = killAfter(child, options.timeoutMs)
      gate.end('g')
      const { code, signal } = await exited
      deadline.clear()
      return { code, signal, timedOut: deadline.timedOut(), stdout: output.stdout(), stderr: output.stderr(), seconds: (now() - started) / 1000 }
    },
    cancel() {
      deadline?.clear()
      child.kill('SIGKILL')
      gate.destroy()
    },
    pid: child.pid,
  }
}
