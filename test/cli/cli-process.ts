/**
 * Runs the CLI through package.json's bin (cli/ffkube.mjs, the launcher of the built dist/cli/main.js)
 * as a child process, the way a user's shell does: with pipes, or under a
 * real pseudo-terminal made by util-linux `script` (no native module).
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process'
import { mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import { CHECKOUT } from '../harness/checkout.js'

export const REPO = CHECKOUT
export const CLI = join(REPO, 'cli/ffkube.mjs')

export interface CliRun {
  code: number
  stdout: string
  stderr: string
}

export interface CliEnvironment {
  /** Where the CLI runs: downloads land here. */
  cwd: string
  /** FFKUBE_URL, FFKUBE_API_KEY, …; HOME and XDG_CONFIG_HOME point into `cwd` unless given. */
  env: Record<string, string>
}

/** A clean environment: no config file of the host user, no inherited FFKUBE_*. */
export async function cliEnvironment(cwd: string, env: Record<string, string> = {}): Promise<CliEnvironment> {
  await mkdir(join(cwd, '.home'), { recursive: true })
  return { cwd, env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: join(cwd, '.home'), XDG_CONFIG_HOME: join(cwd, '.home', '.config'), ...env } }
}

/** `ffkube <args>` with pipes (not a TTY): resolves with the exit code and both streams. */
export function runCli(environment: CliEnvironment, args: string[], options: { stdin?: string; env?: Record<string, string> } = {}): Promise<CliRun> {
  return new Promise((resolvePromise, reject) => {
    const child = execFile(process.execPath, [CLI, ...args], { cwd: environment.cwd, env: { ...environment.env, ...options.env }, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : null) : 0
      if (code === null) reject(error)
      else resolvePromise({ code, stdout, stderr })
    })
    child.stdin?.end(options.stdin ?? '')
  })
}

/** A word the shell passes through unchanged. */
function shellQuote(word: string): string {
  return `'${word.replace(/'/g, `'\\''`)}'`
}

/**
 * `ffkube <args>` under a pseudo-terminal: stdin, stdout and stderr are all
 * the pty, so the CLI sees a TTY and draws its progress bar. `output` is what
 * the terminal received (both streams, with escape sequences).
 */
export function runCliInTerminal(environment: CliEnvironment, args: string[]): Promise<{ code: number; output: string }> {
  const command = [process.execPath, CLI, ...args].map(shellQuote).join(' ')
  return new Promise((resolvePromise, reject) => {
    // -q: no banner; -e: exit with the child's code; -f: flush as it goes; -c: the command; /dev/null: no typescript file.
    execFile('script', ['-qefc', command, '/dev/null'], { cwd: environment.cwd, env: { ...environment.env, TERM: 'xterm-256color' }, maxBuffer: 16 * 1024 * 1024 }, (error, stdout) => {
      const code = error ? (typeof error.code === 'number' ? error.code : null) : 0
      if (code === null) reject(error)
      else resolvePromise({ code, output: stdout })
    })
  })
}

/** `ffkube <args>` left running: resolves `waitForStderr` once stderr matches, so a test can act on what the CLI said. */
export function startCli(environment: CliEnvironment, args: string[]): { child: ChildProcess; waitForStderr(pattern: RegExp): Promise<string>; done: Promise<CliRun> } {
  const child = spawn(process.execPath, [CLI, ...args], { cwd: environment.cwd, env: environment.env, stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  const waiters: { pattern: RegExp; resolve: (text: string) => void }[] = []
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString()
    for (const waiter of [...waiters]) {
      if (!waiter.pattern.test(stderr)) continue
      waiters.splice(waiters.indexOf(waiter), 1)
      waiter.resolve(stderr)
    }
  })
  const done = new Promise<CliRun>((resolve) => child.once('close', (code) => resolve({ code: code ?? -1, stdout, stderr })))
  return {
    child,
    done,
    waitForStderr: (pattern) =>
      pattern.test(stderr)
        ? Promise.resolve(stderr)
        : Promise.race([
            new Promise<string>((resolve) => waiters.push({ pattern, resolve })),
            done.then((run) => Promise.reject(new Error(`ffkube exited ${run.code} before stderr matched ${pattern}:\n${run.stderr}`))),
          ]),
  }
}
