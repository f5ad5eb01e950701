/**
 * The cluster lane's release (test/cluster/release.ts) as the real-node
 * benches that load the node install it: the API's and worker's CPU requests
 * raised, and optionally the Business plan's concurrency.
 *
 * Why the requests: with the lane's 50m, a node whose CPU a burst of runner
 * pods saturates gives the API a 50m share. The API and worker pods went
 * NotReady (most likely /readyz timing out) and the Service refused
 * connections (throughput bench, load 50). A real cluster runs its runners on their own nodes or gives the
 * service what it needs; the benches measure ffkube, not a starved API.
 */
import type { Teardown } from '../test/harness/scratch.js'
import { installRelease, type Release } from '../test/cluster/release.js'

/** BENCH_SERVICE_CPU_REQUEST: the API's and worker's CPU request (default 300m). */
export const SERVICE_CPU_REQUEST = process.env.BENCH_SERVICE_CPU_REQUEST ?? '300m'

export interface BenchReleaseOptions {
  /** CONCURRENT_COMMANDS_BUSINESS; the chart's default (8) when unset. */
  businessConcurrency?: number
}

export async function installBenchRelease(t: Teardown, log: (line: string) => void, options: BenchReleaseOptions = {}): Promise<Release> {
  return installRelease(t, log, {
    values: (values) => {
      if (options.businessConcurrency !== undefined) {
        const config = values.config as Record<string, unknown>
        config.concurrentCommands = { free: 1, trial: 2, growth: 4, business: options.businessConcurrency }
      }
      for (const component of ['api', 'worker'] as const) {
        const settings = values[component] as { resources: { requests: Record<string, string> } }
        values[component] = { ...settings, resources: { ...settings.resources, requests: { ...settings.resources.requests, cpu: SERVICE_CPU_REQUEST } } }
      }
    },
  })
}
