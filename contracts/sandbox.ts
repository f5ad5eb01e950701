/**
 * The jail every tool that touches a user's bytes starts in on a host without
 * a pod around it (local mode's ffmpeg, ffprobe and yt-dlp, and the file
 * processor's ffprobe): bubblewrap (Debian's `bubblewrap`) with every
 * namespace unshared, the system read-only, the one work directory visible
 * and writable, no capabilities, and resource limits set by util-linux's
 * `prlimit` before bwrap starts (bwrap has no option for them).
 *
 * Pure: builds the argv. contracts/tool-process.ts spawns it, and the API
 * side (api/executors/sandbox-host.ts) finds out at start whether this host
 * can run it. In the runner image on Kubernetes no sandbox is configured: the
 * pod's security context is the layer there (README, "Sandbox").
 */

/** What this host offers; null in a process that runs tools unwrapped (a runner pod). */
export interface SandboxHost {
  /** bwrap's path, or null when this host cannot run it: then only the limits apply. */
  bwrap: string | null
  /** Host paths the tools need besides the system's, visible read-only (the provisioned tools' cache). */
  readOnly: readonly string[]
  limits: ToolLimits
}

/**
 * setrlimit(2) bounds, lowered only (root here lacks CAP_SYS_RESOURCE, and
 * none is needed to lower). RLIMIT_NPROC is left alone: it counts every
 * process of the real user on the host (root's, for `npm start` as root), not
 * the sandbox's, so no single value is both safe and effective; the pid
 * namespace and the deadline bound what one tool can start.
 */
export interface ToolLimits {
  /** RLIMIT_FSIZE: the largest file one write may grow (ffmpeg's outputs, yt-dlp's downloads). */
  fileBytes: number
  /** RLIMIT_NOFILE. */
  openFiles: number
  /** RLIMIT_CORE: 0, so a crashing tool leaves no image of its memory behind. */
  coreBytes: number
}

export const DEFAULT_TOOL_LIMITS: ToolLimits = { fileBytes: 64 * 1024 ** 3, openFiles: 1024, coreBytes: 0 }

/** ffmpeg and ffprobe get no network (the runner fetched their inputs); yt-dlp keeps the host's, see README "Sandbox". */
export type SandboxNetwork = 'none' | 'host'

export interface SandboxRun {
  /** The tool's cwd and the one directory it may see and write; an absolute path. */
  workDir: string
  network: SandboxNetwork
  /**
   * Directories besides the work dir the tool may see and write, at the same
   * path (yt-dlp's cookie directory, contracts/ytdlp-cookies.ts); absolute paths.
   */
  binds?: readonly string[]
  /** The descriptor bwrap reads the seccomp filter from (seccomp-filter.ts); none: no filter. */
  seccompFd?: number
}

/**
 * System paths bound read-only. /usr holds the programs and libraries
 * (Debian's /bin, /lib… are links into it); of /etc only what the tools read:
 * the linker cache, the alternatives some libraries resolve through, fonts
 * (drawtext) and CA certificates (yt-dlp's TLS, end to end through the guard
 * proxy). Nothing of /root, /home, /var or the service's data.
 */
export const SYSTEM_READ_ONLY: readonly string[] = [
  '/usr',
  '/bin',
  '/sbin',
  '/lib',
  '/lib64',
  '/lib32',
  '/etc/ld.so.cache',
  '/etc/alternatives',
  '/etc/fonts',
  '/etc/ssl',
  '/etc/ca-certificates',
  '/etc/localtime',
]

/** The unprivileged identity inside: `nobody`, which owns the work dir there (its owner outside is mapped to it). */
const SANDBOX_ID = '65534'

function prlimitArgs(limits: ToolLimits): string[] {
  return ['/usr/bin/prlimit', `--fsize=${limits.fileBytes}`, `--nofile=${limits.openFiles}`, `--core=${limits.coreBytes}`, '--']
}

function bwrapArgs(bwrap: string, host: SandboxHost, run: SandboxRun): string[] {
  const args = [bwrap, '--unshare-all']
  if (run.network === 'host') args.push('--share-net')
  args.push('--unshare-user', '--uid', SANDBOX_ID, '--gid', SANDBOX_ID, '--disable-userns')
  args.push('--die-with-parent', '--new-session', '--cap-drop', 'ALL')
  if (run.seccompFd !== undefined) args.push('--seccomp', String(run.seccompFd))
  // The tmpfs first: a read-only path under /tmp (a test's tools) is bound over it, not hidden by it.
  args.push('--proc', '/proc', '--dev', '/dev', '--tmpfs', '/tmp')
  for (const path of SYSTEM_READ_ONLY) args.push('--ro-bind-try', path, path)
  for (const path of host.readOnly) args.push('--ro-bind', path, path)
  // The same path inside as outside, so paths the runner computes mean the same to the tool.
  for (const path of run.binds ?? []) args.push('--bind', path, path)
  args.push('--bind', run.workDir, run.workDir, '--chdir', run.workDir)
  args.push('--')
  return args
}

/**
 * The argv that runs `program args` jailed: `[prlimit …, bwrap …, program,
 * …args]`, or `[prlimit …, program, …args]` when the host has no bwrap
 * (limits only). prlimit and bwrap exec, so the spawned pid is the
 * jail's and killing it takes the tool down (--die-with-parent).
 */
export function sandboxedArgv(host: SandboxHost, run: SandboxRun, program: string, args: readonly string[]): string[] {
  const limited = prlimitArgs(host.limits)
  if (host.bwrap) return [...limited, ...bwrapArgs(host.bwrap, host, run), program, ...args]
  return [...limited, program, ...args]
}

/** The environment variable that carries a SandboxHost from the local executor to its runners. */
export const SANDBOX_ENV = 'FFKUBE_SANDBOX'

/** A SandboxHost as FFKUBE_SANDBOX holds it (JSON); unset or empty means none. */
export function parseSandboxHost(text: string | undefined): SandboxHost | null {
  if (text === undefined || text === '') return null
  const value = JSON.parse(text) as Partial<SandboxHost>
  const limits = value.limits as Partial<ToolLimits> | undefined
  const numbers = limits && [limits.fileBytes, limits.openFiles, limits.coreBytes].every((n) => Number.isSafeInteger(n) && (n as number) >= 0)
  const readOnly = Array.isArray(value.readOnly) && value.readOnly.every((p) => typeof p === 'string' && p.startsWith('/'))
  const bwrap = value.bwrap === null || (typeof value.bwrap === 'string' && value.bwrap.startsWith('/'))
  if (!numbers || !readOnly || !bwrap) throw new Error(`${SANDBOX_ENV} must be {"bwrap": path|null, "readOnly": [absolute paths], "limits": {fileBytes, openFiles, coreBytes}}`)
  return { bwrap: value.bwrap as string | null, readOnly: value.readOnly as string[], limits: limits as ToolLimits }
}
