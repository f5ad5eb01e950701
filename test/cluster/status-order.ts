/**
 * The order a command's status may be seen in (the spec's QUEUED, PROCESSING,
 * SUCCESS, FAILED): never back from PROCESSING to QUEUED, never out of a
 * terminal status. Used by the cluster lane's fault set and bench/chaos.ts
 * over what a client saw through GET and the event stream.
 */

const RANK: Record<string, number> = { QUEUED: 0, PROCESSING: 1, SUCCESS: 2, FAILED: 2 }

export const TERMINAL_STATUSES = new Set(['SUCCESS', 'FAILED'])

/**
 * The steps of `seen` (statuses in the order one client saw them) that go
 * backwards: to a lower rank, or from one terminal status to the other. An
 * unknown status counts as a backward step, being no status of the spec.
 */
export function backwardSteps(seen: readonly string[]): Array<[string, string]> {
  const steps: Array<[string, string]> = []
  for (let i = 1; i < seen.length; i++) {
    const [before, after] = [seen[i - 1]!, seen[i]!]
    const [from, to] = [RANK[before], RANK[after]]
    if (from === undefined || to === undefined || to < from || (to === 2 && from === 2 && before !== after)) steps.push([before, after])
  }
  return steps
}
