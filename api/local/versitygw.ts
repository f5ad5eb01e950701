import { randomBytes } from 'node:crypto'
import { mkdir } from 'node:fs/promises'
import { ChildServer } from './child-server.js'
import { startOnFreePort } from './ports.js'
import { toolPath } from './tools.js'

/** An S3-compatible server on a loopback port. */
export interface LocalS3 {
  endpoint: string
  server: ChildServer
}

/** Root credentials of a local S3 server; they must stay the same for the data it already holds. */
export interface S3RootCredentials {
  accessKeyId: string
  secretAccessKey: string
}

/**
 * Starts the Versity S3 Gateway (versitygw) with its posix backend: each
 * bucket is a folder of `dataDir`, each object a file, its metadata in
 * extended attributes (docs/adr/0007-versitygw.md). versitygw cannot report a
 * port it picked itself (startOnFreePort). `host` is the address to listen on
 * (loopback unless a test needs pods to reach it).
 */
export async function startVersitygw(dataDir: string, credentials: S3RootCredentials, host = '127.0.0.1'): Promise<LocalS3> {
  await mkdir(dataDir, { recursive: true })
  return startOnFreePort((port) => startVersitygwOn(port, dataDir, credentials, host))
}

/**
 * Starts versitygw on `port`, and fails if the port is not its own. Its
 * health path is new for each start: when another process took the port
 * between freePort and this bind (another versitygw, say), the probe meets
 * that server, which does not answer this path, until this one exits on its
 * failed bind; a fixed path would take the other server for this one.
 */
export async function startVersitygwOn(port: number, dataDir: string, credentials: S3RootCredentials, host = '127.0.0.1'): Promise<LocalS3> {
  const healthPath = `/ffkube-health-${randomBytes(8).toString('hex')}`
  const server = ChildServer.start({
    name: 'versitygw',
    command: toolPath('versitygw'),
    // --keep-alive: connections are reused. v1.8.0 as published left a connection unusable
    // after an aws-chunked upload with a checksum trailer (the SDK's default for a streamed
    // body); our build carries the fix (scripts/toolchain/versitygw/patches, ADR 0007).
    // --quiet: no line per request.
    // posix --data-integrity-etag: an object's ETag is derived from the checksum the
    // server computes anyway (CRC32 sent by the client, else CRC64NVME) instead of an MD5
    // over every byte: nothing of ours reads an ETag, and an HLS ladder is ~40 MB of MD5.
    // posix --disable-object-lock-file: no lock file opened and flocked per PUT; it guards
    // conditional writes between several gateways on one folder, and each folder has one.
    args: ['--port', `${host}:${port}`, '--health', healthPath, '--keep-alive', '--quiet', 'posix', '--data-integrity-etag', '--disable-object-lock-file', dataDir],
    env: {
      PATH: process.env.PATH ?? '',
      ROOT_ACCESS_KEY_ID: credentials.accessKeyId,
      ROOT_SECRET_ACCESS_KEY: credentials.secretAccessKey,
    },
  })
  const endpoint = `http://${host}:${port}`
  try {
    await server.waitUntilReady(async () => ((await fetch(`${endpoint}${healthPath}`)).ok ? true : undefined))
    return { endpoint, server }
  } catch (err) {
    await server.stop()
    throw err
  }
}
