import { randomBytes, randomUUID } from 'node:crypto'
import { Agent as HttpAgent } from 'node:http'
import { Agent as HttpsAgent } from 'node:https'
import { DeleteObjectCommand, GetObjectCommand, PutObjectCommand, S3Client, S3ServiceException } from '@aws-sdk/client-s3'
import type { FastifyBaseLogger } from 'fastify'
import { pinnedLookup, systemResolver, UrlGuardError } from '../../contracts/url-guard-fetch.js'
import type { StorageCredentials, StorageDestinationDocument } from './storage-destination-repository.js'

const STEP_TIMEOUT_MS = 10_000

/** The outcome the spec's test endpoint answers with; `error` is safe to show the client. */
export type ConnectionTestResult = { ok: true } | { ok: false; error: string }

/** A failure whose message may be shown to the client as it is. */
class SafeFailure extends Error {}

/** "could not write the test object: AccessDenied": the S3 error code, never its text, which may echo internals. */
async function step<T>(what: string, action: () => Promise<T>): Promise<T> {
  try {
    return await action()
  } catch (err) {
    if (err instanceof SafeFailure) throw err
    // The guard's own text names the address the host resolved to: internal, so not shown.
    if (err instanceof UrlGuardError && err.code === 'FORBIDDEN_ADDRESS') {
      throw new SafeFailure('endpoint host resolves to a private or reserved address')
    }
    if (err instanceof UrlGuardError) throw new SafeFailure('endpoint host name does not resolve')
    if (err instanceof S3ServiceException) throw new SafeFailure(`could not ${what}: ${err.name}`)
    if (err instanceof Error && (err.name === 'TimeoutError' || err.name === 'AbortError')) {
      throw new SafeFailure(`could not ${what}: the endpoint did not answer in time`)
    }
    throw new SafeFailure(`could not ${what}: the endpoint could not be reached`)
  }
}

/**
 * Writes, reads back, verifies and deletes a temporary object under the
 * destination's prefix with its own credentials, as the spec's connection
 * test does. Never throws; the cause of a failure goes to the log only.
 */
export async function testConnection(
  destination: StorageDestinationDocument,
  credentials: StorageCredentials,
  options: { allowPrivateNetworks: boolean; logger: FastifyBaseLogger },
): Promise<ConnectionTestResult> {
  const key = `${destination.prefix ? `${destination.prefix}/` : ''}.ffkube-connection-test-${randomUUID()}`
  const body = randomBytes(32).toString('hex')
  // Every connection resolves through the private-network guard and connects to the address it checked.
  const lookup = pinnedLookup(systemResolver, { allowPrivateNetworks: options.allowPrivateNetworks })
  const httpAgent = new HttpAgent({ lookup })
  const httpsAgent = new HttpsAgent({ lookup })
  const client = new S3Client({
    endpoint: destination.endpoint_url,
    region: destination.region,
    forcePathStyle: destination.path_style,
    maxAttempts: 1,
    requestHandler: { httpAgent, httpsAgent },
    credentials: {
      accessKeyId: credentials.access_key_id,
      secretAccessKey: credentials.secret_access_key,
      ...(credentials.session_token ? { sessionToken: credentials.session_token } : {}),
    },
  })
  const signal = () => AbortSignal.timeout(STEP_TIMEOUT_MS)
  try {
    const Bucket = destination.bucket
    await step('write the test object', () =>
      client.send(new PutObjectCommand({ Bucket, Key: key, Body: body, ContentType: 'text/plain' }), { abortSignal: signal() }),
    )
    const read = await step('read the test object back', async () => {
      const got = await client.send(new GetObjectCommand({ Bucket, Key: key }), { abortSignal: signal() })
      return got.Body ? await got.Body.transformToString() : ''
    })
    if (read !== body) throw new SafeFailure('the test object read back differs from what was written')
    await step('delete the test object', () => client.send(new DeleteObjectCommand({ Bucket, Key: key }), { abortSignal: signal() }))
    return { ok: true }
  } catch (err) {
    options.logger.warn({ err, storage_destination_id: destination._id }, 'storage destination connection test failed')
    return { ok: false, error: err instanceof SafeFailure ? err.message : 'connection test failed' }
  } finally {
    client.destroy()
    httpAgent.destroy()
    httpsAgent.destroy()
  }
}
