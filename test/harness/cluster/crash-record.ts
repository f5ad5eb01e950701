import { readFile, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { processesMentioning } from '../processes.js'
import { killContainers } from './containerd.js'
import { restoreHostState, type HostState } from './host-state.js'
import { unmountAll } from './mounts.js'
import { removeBridge } from './network.js'

/** Beside the host lock, on tmpfs: what a running cluster must undo, should its process die before teardown. */
export const CRASH_RECORD_PATH = '/run/lock/ffkube-cluster.json'

/** The host as it was before the cluster, and the folders its processes run from. */
export interface CrashRecord {
  hostState: HostState
  dirs: string[]
}

export async function writeCrashRecord(record: CrashRecord, path = CRASH_RECORD_PATH): Promise<void> {
  await writeFile(path, JSON.stringify(record))
}

export async function removeCrashRecord(path = CRASH_RECORD_PATH): Promise<void> {
  await rm(path, { force: true })
}

/**
 * Run under the host lock before a cluster starts: when the previous cluster's
 * process died without its teardown (SIGKILL, a crash), kills what it left
 * running (every process naming one of its folders, its containers), unmounts
 * and removes its folders and puts the host back as that cluster found it.
 * Returns whether there was anything to recover.
 */
export async function recoverCrashedCluster(path = CRASH_RECORD_PATH): Promise<boolean> {
  const text = await readFile(path, 'utf8').catch(() => undefined)
  if (text === undefined) return false
  const record = JSON.parse(text) as CrashRecord
  for (const dir of record.dirs) {
    for (const pid of await processesMentioning(dir)) {
      try {
        process.kill(pid, 'SIGKILL')
      } catch {
        // Already gone.
      }
    }
    const containerdDir = join(dir, 'containerd')
    await killContainers(containerdDir, join(containerdDir, 'containerd.sock'))
    await unmountAll(dir)
    await rm(dir, { recursive: true, force: true })
  }
  await removeBridge()
  await restoreHostState(record.hostState)
  await removeCrashRecord(path)
  return true
}
