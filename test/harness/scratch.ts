import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/** The slice of a tap test the harness needs: somewhere to register cleanup. */
export interface Teardown {
  teardown(fn: () => unknown): void
}

/** A fresh temporary folder, removed when the test ends. */
export async function scratchDir(t: Teardown, prefix = 'ffkube-test-'): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  return dir
}
