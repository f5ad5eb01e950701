import { ListBucketsCommand, S3Client } from '@aws-sdk/client-s3'
import { ChildServer } from '../../api/local/child-server.js'
import { startOnFreePort } from '../../api/local/ports.js'
import { toolPath } from '../../api/local/tools.js'
import type { LocalS3, S3RootCredentials } from '../../api/local/versitygw.js'
import { backgroundLaneDone } from './background-lanes.js'

/**
 * Starts MinIO serving `dataDir` with the given root credentials: the tests'
 * customer-owned S3 server (a storage destination), a second implementation
 * beside the managed store's versitygw so that no destination test passes on
 * one server's quirks. MinIO's community edition is unmaintained since 2025,
 * but customers still run it. MinIO cannot report a port it picked itself
 * (startOnFreePort). `host` is the address to listen on (loopback unless a
 * test needs pods to reach it).
 */
export async function startMinio(dataDir: string, credentials: S3RootCredentials, host = '127.0.0.1'): Promise<LocalS3> {
  return startOnFreePort((port) => startMinioOn(port, dataDir, credentials, host))
}

/**
 * Starts MinIO on `port`, and fails if the port is not its own. Ready means
 * a request signed with its own credentials is answered: every MinIO answers
 * /minio/health/ready, so when another test's MinIO took the port between
 * freePort and this bind, that probe alone would take the other server for
 * this one before this one exits on its failed bind.
 */
export async function startMinioOn(port: number, dataDir: string, credentials: S3RootCredentials, host = '127.0.0.1'): Promise<LocalS3> {
  await backgroundLaneDone('go-tools')
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
  const client = new S3Client({ endpoint, region: 'us-east-1', forcePathStyle: true, credentials, maxAttempts: 1 })
  try {
    await server.waitUntilReady(async () => ((await client.send(new ListBucketsCommand({}))) ? true : undefined))
    return { endpoint, server }
  } catch (err) {
    await server.stop()
    throw err
  } finally {
    client.destroy()
  }
}
