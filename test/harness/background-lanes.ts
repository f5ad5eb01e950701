/**
 * `npm test` runs most test files while scripts/provision.sh's background lanes
 * (MinIO and the chart's tools, kube, the images) still build, and the files
 * that need those lanes once provisioning is over (scripts/test.sh, split by
 * scripts/test-phases.ts from imports and tool names). Should a file that needs
 * a lane run early all the same (a way of reaching a tool the split does not
 * see), the harness waits here for that lane instead of failing on a binary
 * not built yet. scripts/test.sh names the lanes' marker folder in
 * FFKUBE_TEST_LANE_MARKERS for the early run only; anywhere else provisioning
 * is over and this returns at once.
 */
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'

/** The lanes scripts/provision.sh runs niced, in the background of the first tap run. */
export type BackgroundLane = 'go-tools' | 'kube' | 'node-images' | 'images'

/**
 * Resolves once the lane is done (its NAME.ok marker); throws once it failed.
 * Not `eventually`: a lane takes minutes, and tap's per-file timeout is the
 * bound; checked twice a second.
 */
export async function backgroundLaneDone(lane: BackgroundLane, env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const markers = env.FFKUBE_TEST_LANE_MARKERS
  if (!markers) return
  for (;;) {
    if (existsSync(join(markers, `${lane}.ok`))) return
    if (existsSync(join(markers, `${lane}.failed`))) throw new Error(`scripts/provision.sh's ${lane} lane failed: what it builds is not there`)
    await sleep(500)
  }
}
