import { spawn } from 'node:child_process'

/** Where the one-cluster-per-host lock lives: on tmpfs, so a reboot clears it. */
export const HOST_LOCK_PATH = '/run/lock/ffkube-cluster.lock'

/**
 * Takes the host-wide lock of the single-node cluster: only one may run on a
 * host, since it changes iptables, sysctls and lo. A second caller waits. The
 * lock is held by a `flock` child reading our stdin, so it is released when we
 * release it and also when this process dies.
 */
export async function acquireHostLock(path = HOST_LOCK_PATH, timeoutMs = 30 * 60_000): Promise<() => Promise<void>> {
  const child = spawn('flock', ['--exclusive', '--timeout', String(Math.ceil(timeoutMs / 1000)), path, 'sh', '-c', 'echo locked; exec cat >/dev/null'], {
    stdio: ['pipe', 'pipe', 'pipe'],
  })
  let stderr = ''
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')))
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  await new Promise<void>((resolve, reject) => {
    child.stdout.once('data', () => resolve())
    void exited.then(() => reject(new Error(`could not take the cluster lock ${path}: ${stderr || 'flock exited'}`)))
  })
  return async () => {
    child.stdin.end()
    await exited
  }
}
