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
