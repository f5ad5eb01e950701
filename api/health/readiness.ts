/** One dependency `/readyz` checks, e.g. MongoDB answering a ping. */
export interface ReadinessProbe {
  name: string
  /** Resolves when the dependency answers; rejects (or times out) when it does not. */
  check(): Promise<void>
}

export type ProbeResult = 'ok' | 'unavailable'

/** Runs every probe at once, each bounded by `timeoutMs`, and reports each by name. */
export async function runProbes(
  probes: readonly ReadinessProbe[],
  timeoutMs: number,
  onFailure: (name: string, err: unknown) => void,
): Promise<Record<string, ProbeResult>> {
  const results = await Promise.all(
    probes.map(async (probe): Promise<[string, ProbeResult]> => {
      let timer: NodeJS.Timeout | undefined
      const timeout = new Promise<never>((_, reject) => {
        // After a stall of the event loop (a loaded host, a process just started) the timer fires
        // in the loop's timers phase, before the poll phase reads an answer that already came:
        // the reject waits for the check phase, after that read.
        timer = setTimeout(() => setImmediate(() => reject(new Error(`no answer within ${timeoutMs} ms`))), timeoutMs)
      })
      try {
        await Promise.race([probe.check(), timeout])
        return [probe.name, 'ok']
      } catch (err) {
        onFailure(probe.name, err)
        return [probe.name, 'unavailable']
      } finally {
        clearTimeout(timer)
      }
    }),
  )
  return Object.fromEntries(results)
}

export interface Readiness {
  /** Whether this replica should take traffic. */
  ready: boolean
  /** Each dependency as it answered this time. */
  checks: Record<string, ProbeResult>
}

/**
 * Whether this replica should take traffic, decided by what is true of this
 * replica alone (docs/adr/0009-readiness.md): it is ready once every
 * dependency has answered it at least once, and stays ready when a shared
 * dependency (MongoDB, NATS, storage) later stops answering. That outage is
 * every replica's at once: failing readiness for it would take every replica
 * out of the Service together, and clients would get the load balancer's
 * connection errors instead of the API's answers, then all replicas back at
 * once. The checks still report each dependency, so the outage shows.
 */
export class ReadinessLatch {
  readonly #answeredOnce = new Set<string>()

  constructor(private readonly probes: readonly ReadinessProbe[]) {}

  async evaluate(timeoutMs: number, onFailure: (name: string, err: unknown) => void): Promise<Readiness> {
    const checks = await runProbes(this.probes, timeoutMs, onFailure)
    for (const [name, result] of Object.entries(checks)) if (result === 'ok') this.#answeredOnce.add(name)
    return { ready: this.probes.every((probe) => this.#answeredOnce.has(probe.name)), checks }
  }
}
