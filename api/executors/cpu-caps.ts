/**
 * The CPU cap of a local run (a command's vcpu_count), where the host lets
 * this process have one: the cgroup v1 `cpu` controller's CFS quota, one
 * cgroup per run under `<root>/ffkube/`, quota = vcpu_count × period, so
 * the runner and every tool it starts (they inherit the cgroup) get at most
 * that many cores' time together. Needs write access to the controller
 * (root on a host mounting cgroup v1, as the development machine does);
 * without it, detect() says why and vcpu_count is recorded but not enforced
 * in local mode. cgroup v2 (cpu.max) is not handled here. Kubernetes mode
 * needs none of this: the run container's CPU limit is the same quota.
 */
import { existsSync, mkdirSync, readdirSync, rmdirSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

/** The CFS period; the quota is vcpu millicores × 100 µs. */
const PERIOD_US = 100_000

export interface CpuCap {
  /** Puts a process (and what it starts from now on) under the cap. */
  add(pid: number): void
  /** Moves `pid` (a warm worker that lives on) back out, then removes the cgroup; a still-busy cgroup is left for the next start. */
  release(pid?: number): void
}

export class CpuCaps {
  /** This process's run cgroups not removed yet. */
  readonly #left = new Set<string>()

  private constructor(private readonly base: string) {}

  /** Removes what release() could not (a killed run's tools still exiting); called when the executor stops. */
  removeLeftovers(): void {
    for (const dir of this.#left) if (removed(dir)) this.#left.delete(dir)
  }

  /** A CpuCaps when the cpu controller at `root` is writable here, else the reason it is not. */
  static detect(root = '/sys/fs/cgroup/cpu'): CpuCaps | { unavailable: string } {
    if (!existsSync(join(root, 'cpu.cfs_quota_us'))) return { unavailable: `no cgroup v1 cpu controller at ${root}` }
    const base = join(root, 'ffkube')
    try {
      mkdirSync(base, { recursive: true })
      // Proves write access where it matters: a quota file of our own.
      writeFileSync(join(base, 'cpu.cfs_quota_us'), '-1')
    } catch (err) {
      return { unavailable: `cannot write ${base} (${(err as NodeJS.ErrnoException).code ?? String(err)})` }
    }
    sweep(base)
    return new CpuCaps(base)
  }

  /** A fresh cgroup named `key` (a run's command and attempt) capped at `millis` millicores. */
  create(key: string, millis: number): CpuCap {
    const dir = join(this.base, key)
    mkdirSync(dir, { recursive: true })
    writeFileSync(join(dir, 'cpu.cfs_period_us'), String(PERIOD_US))
    writeFileSync(join(dir, 'cpu.cfs_quota_us'), String(Math.max(1000, Math.round((millis * PERIOD_US) / 1000))))
    this.#left.add(dir)
    return {
      add: (pid) => writeFileSync(join(dir, 'cgroup.procs'), String(pid)),
      release: (pid) => {
        if (pid !== undefined) {
          try {
            writeFileSync(join(this.base, 'cgroup.procs'), String(pid))
          } catch {
            // Gone already (killed by a cancel or a deadline).
          }
        }
        // A killed run's tools may still be exiting: try again a little later, and at stop (removeLeftovers).
        if (removed(dir)) {
          this.#left.delete(dir)
          return
        }
        setTimeout(() => {
          if (removed(dir)) this.#left.delete(dir)
        }, 2_000).unref()
      },
    }
  }
}

function removed(dir: string): boolean {
  try {
    rmdirSync(dir)
    return true
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ENOENT'
  }
}

/** A run's cgroup older than this, if empty, was left behind (its tools were reaped after the service stopped). */
const STALE_MS = 60_000

/**
 * Removes the empty run cgroups that earlier runs left behind. Only old ones:
 * another service on this host may have just made one it is about to fill,
 * and rmdir refuses a cgroup that holds a process anyway.
 */
function sweep(base: string): void {
  const now = Date.now()
  for (const entry of readdirSync(base, { withFileTypes: true })) {
    if (!entry.isDirectory()) continue
    const dir = join(base, entry.name)
    try {
      if (now - statSync(dir).mtimeMs > STALE_MS) removed(dir)
    } catch {
      // Removed by another service meanwhile.
    }
  }
}
