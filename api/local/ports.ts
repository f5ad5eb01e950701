import { createServer } from 'node:net'

/**
 * A loopback port that was free a moment ago. Only for servers that cannot
 * listen on port 0 and report the port they got (etcd, versitygw, MinIO, kube-apiserver);
 * the tiny race is why callers retry a start that fails to bind.
 */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const address = server.address()
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))))
    })
  })
}

/**
 * Starts a server that must be told its port: on a port freePort found, again
 * on another (up to `attempts` in all) when the start fails, as another
 * process may have taken the port in between. `start` stops what it spawned
 * before it throws.
 */
export async function startOnFreePort<T>(start: (port: number) => Promise<T>, attempts = 3): Promise<T> {
  let lastError: unknown
  for (let attempt = 0; attempt < attempts; attempt++) {
    try {
      return await start(await freePort())
    } catch (err) {
      lastError = err
    }
  }
  throw lastError
}
