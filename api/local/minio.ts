import { ChildServer } from './child-server.js'
import { freePort } from './ports.js'
import { toolPath } from './tools.js'

/** An S3-compatible server (MinIO) on a loopback port. */
export interface LocalS3 {
  endpoint: string
  server: ChildServer
}

const BIND_ATTEMPTS = 3

/**
 * Starts MinIO serving `dataDir` with the given root credentials. MinIO cannot
 * report a port it picked itself, so a free port is chosen first and the start
 * retried if another process took it in between. `host` is the address to
 * listen on (loopback unless a test needs pods to reach it).
 */
export async function startMinio(dataDir: string, credentials: { accessKeyId: string; secretAccessKey: string }, host = '127.0.0.1'): Promise<LocalS3> {
  let lastError: unknown
  for (let attempt = 0; attempt < BIND_ATTEMPTS; attempt++) {
    const port = await freePort()
    const server = ChildServer.start({
      name: 'minio',
      command: toolPath('minio'),
      args: ['server', dataDir, '--address', `${host}:${port}`, '--quiet', '--anonymous'],
      env: {
        ...process.env,
        MINIO_ROOT_USER: credentials.accessKeyId,
        MINIO_ROOT_PASSWORD: credentials.secretAccessKey,
        MINIO_BROWSER: 'off',
        MINIO_UPDATE: 'off',
      },
    })
    const endpoint = `http://${host}:${port}`
    try {
      await server.waitUntilReady(async () => ((await fetch(`${endpoint}/minio/health/ready`)).ok ? true : undefined))
      return { endpoint, server }
    } catch (err) {
      lastError = err
      await server.stop()
    }
  }
  throw lastError
}
