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
 *
 * A cgroup is more than its quota: the scheduler weighs a group against the
 * host's other tasks as one entity of `cpu.shares`, however many threads run
 * in it. With the default 1024 (one task's weight) a multi-threaded ffmpeg
 * in its group lost CPU to the service and the store beside it that the
 * same ffmpeg outside a group kept, so the in-service transcode ran slower
 * than a bare one of the same arguments even with a quota it never reached.
 * So a group's shares are its vcpu_count's (1024 per core, as the kubelet
 * derives them from a CPU request), and a run whose vcpu_count covers every
 * core of the host gets no group at all (capNeeded): its quota could never
 * bind, and outside a group it shares the CPU exactly as a bare ffmpeg does.
 */
import { existsSync, mkdirSync, readdirSync, rmdirSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

/** The CFS period; the quota is vcpu millicores × 100 µs. */
const PERIOD_US = 100_000
/** cpu.shares per core (the kernel's default for one task); the kernel's floor is 2. */
const SHARES_PER_CORE = 1024

/** Whether `millis` millicores would cap anything on a host of `cores` cores: less than all of them. Pure. */
export function capNeeded(millis: number, cores: number): boolean {
  return millis < cores * 1000
}

/** The cpu.shares of a group of `millis` millicores: its cores' weight, never below the kernel's floor. Pure. */
export function sharesOf(millis: number): number {
  return Math.max(2, Math.floor((millis * SHARES_PER_CORE) / 1000))
}

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
    writeFileSync(join(dir, 'cpu.shares'), String(sharesOf(millis)))
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
