/**
 * Finds out, once at start, what jail this host can put the tools in
 * (contracts/sandbox.ts): bubblewrap when it is installed and the kernel
 * lets it make its namespaces, else the resource limits alone, loudly. The
 * local executor hands the answer to its runners (FFKUBE_SANDBOX) and the
 * file processor uses it for its ffprobe.
 */
import { spawnSync } from 'node:child_process'
import { closeSync, existsSync, mkdtempSync, openSync, realpathSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { DEFAULT_TOOL_LIMITS, sandboxedArgv, type SandboxHost } from '../../contracts/sandbox.js'
import { seccompProgram } from '../../contracts/seccomp-filter.js'
import { toolCacheDir } from '../local/tools.js'
import type { Logger } from '../logger.js'
import { isExecutable } from './tool-paths.js'

/** What the log and /readyz say: `bwrap`, `limits-only` (no bwrap here) or `none` (not even prlimit). */
export type SandboxLevel = 'bwrap' | 'limits-only' | 'none'

export interface SandboxDetection {
  host: SandboxHost | null
  level: SandboxLevel
  /** Why the level is below `bwrap`; null when it is not. */
  reason: string | null
}

/**
 * Paths the tools need read-only besides the system's: the folder of each
 * tool's binary (after links) and the folders the tools load from beside it
 * (yt-dlp's package and ffmpeg's build live in the provisioned cache).
 * Folders under /usr are in the sandbox already.
 */
export function toolFolders(tools: readonly string[], extra: readonly string[] = []): string[] {
  const folders = new Set<string>()
  for (const path of [...tools.filter((tool) => tool.includes('/')), ...extra]) {
    if (!existsSync(path)) continue
    for (const folder of [dirname(path), dirname(realpathSync(path))]) {
      if (!folder.startsWith('/usr/') && folder !== '/usr') folders.add(folder)
    }
  }
  return [...folders]
}

/**
 * The folders of the Python that runs yt-dlp when it lives outside /usr (a
 * pyenv or a virtualenv: scripts/provision.sh uses the python3 on PATH): the
 * install root above the python3 found on PATH (e.g. ~/.pyenv above its
 * shims/) and above its real interpreter, read-only.
 */
export function pythonFolders(env: NodeJS.ProcessEnv = process.env): string[] {
  const python = (env.PATH ?? '').split(':').map((dir) => join(dir, 'python3')).find((path) => path.startsWith('/') && isExecutable(path, env))
  if (!python) return []
  const roots = [dirname(dirname(python)), dirname(dirname(realpathSync(python)))]
  return [...new Set(roots.filter((root) => root !== '/' && root !== '/usr' && !root.startsWith('/usr/')))]
}

/**
 * Everything the tools need read-only: their folders, the Python that runs
 * yt-dlp, and the provisioned cache (yt-dlp is a script there that runs the
 * package beside it).
 */
export function toolsReadOnly(tools: readonly string[], extra: readonly string[] = [], options: { dataDir?: string; env?: NodeJS.ProcessEnv } = {}): string[] {
  const env = options.env ?? process.env
  const cache = toolCacheDir(env)
  const folders = [...new Set([...toolFolders(tools, extra), ...pythonFolders(env), ...(existsSync(cache) ? [cache] : [])])]
  // A folder holding the data dir (a python3 in ~/bin makes ~ a "Python root") would show the tools every secret in it.
  const data = options.dataDir ? resolve(options.dataDir) : null
  return folders.filter((folder) => data === null || !(data === folder || data.startsWith(`${folder}/`)))
}

/** The filter written to a file in `dir`, opened for reading. */
function openFilter(dir: string, filter: Buffer): number {
  const path = join(dir, 'seccomp.bpf')
  writeFileSync(path, filter)
  return openSync(path, 'r')
}

/** The first test of the real jail: `true` in it must exit 0. Returns why not, or null. */
function refusal(host: SandboxHost, env: NodeJS.ProcessEnv): string | null {
  let workDir: string
  try {
    workDir = mkdtempSync(join(tmpdir(), 'ffkube-sandbox-check-'))
  } catch (err) {
    // A read-only root without a writable TMPDIR (a pod): no check, so no jail.
    return `cannot make a folder to test the jail in: ${err instanceof Error ? err.message : String(err)}`
  }
  try {
    // With the seccomp filter the tools get, read from a file here rather than a pipe.
    const filter = seccompProgram()
    const filterFd = filter ? openFilter(workDir, filter) : null
    const [file, ...args] = sandboxedArgv(host, { workDir, network: 'none', ...(filterFd === null ? {} : { seccompFd: 3 }) }, '/usr/bin/true', [])
    const stdio = filterFd === null ? (['ignore', 'ignore', 'pipe'] as const) : (['ignore', 'ignore', 'pipe', filterFd] as const)
    const run = spawnSync(file as string, args, { cwd: workDir, env: { PATH: env.PATH ?? '/usr/bin:/bin' }, encoding: 'utf8', timeout: 10_000, stdio: [...stdio] })
    if (filterFd !== null) closeSync(filterFd)
    if (run.error) return run.error.message
    return run.status === 0 ? null : (run.stderr.trim() || `exit ${run.status ?? run.signal}`)
  } finally {
    rmSync(workDir, { recursive: true, force: true })
  }
}

/** Looks at this host once; logs a warning when the tools will run with less than bubblewrap. */
export function detectSandbox(readOnly: readonly string[], logger: Logger, env: NodeJS.ProcessEnv = process.env): SandboxDetection {
  if (!existsSync('/usr/bin/prlimit')) {
    const reason = '/usr/bin/prlimit (util-linux) is missing'
    logger.warn({ sandbox: 'none', reason }, 'SANDBOX OFF: ffmpeg, ffprobe and yt-dlp run unconfined, with this service\'s files and network in reach')
    return { host: null, level: 'none', reason }
  }
  const limitsOnly: SandboxHost = { bwrap: null, readOnly, limits: DEFAULT_TOOL_LIMITS }
  const bwrap = (env.PATH ?? '').split(':').map((dir) => join(dir, 'bwrap')).find((path) => path.startsWith('/') && isExecutable(path, env))
  const reason = bwrap ? refusal({ ...limitsOnly, bwrap }, env) : 'bwrap is not installed (Debian package bubblewrap)'
  if (bwrap && reason === null) return { host: { ...limitsOnly, bwrap }, level: 'bwrap', reason: null }
  logger.warn(
    { sandbox: 'limits-only', reason },
    'SANDBOX DEGRADED: bubblewrap cannot run here, so ffmpeg, ffprobe and yt-dlp run with resource limits only, as this service\'s user, with its files and network in reach; only the argument policy stands between a command and them',
  )
  return { host: limitsOnly, level: 'limits-only', reason }
}
