/**
 * The runner's single PUT of bytes in memory, sent without the SDK's
 * middleware chain. An HLS ladder is ~190 such PUTs beside the encode, and in
 * the runner's lite mode (no optimising compiler) the chain run for each of
 * them was most of its CPU: ~4.5 ms per object through the SDK, ~2.1 ms this
 * way (bench/object-put-cost.ts, docs/benchmarks/multi-file.md).
 *
 * What is not ours: the signature is the SDK's own signer
 * (`@smithy/signature-v4`, the one the S3 client runs), and where the request
 * goes (path-style or virtual-hosted, a custom endpoint and its base path,
 * https, the signing region) is asked of the S3 client itself once per store,
 * by a PUT it builds but never sends (`addressOf`). What is ours: the
 * request's headers, the send on the store's kept-alive agents (the
 * private-network guard's for a customer's endpoint), the retry of transient
 * failures, and reading S3's error code. Multipart uploads, streamed PUTs and
 * deletes stay on the SDK.
 *
 * Integrity: the body's CRC32 travels in `x-amz-checksum-crc32`, which the
 * store checks (and refuses the object on a mismatch), and the header is
 * signed; the payload is signed `UNSIGNED-PAYLOAD`, as the SDK itself does
 * for a streamed body (lean-requests.ts says why).
 */
import { createHash, createHmac, type Hash, type Hmac } from 'node:crypto'
import { request as httpRequest, type Agent as HttpAgent, type IncomingMessage } from 'node:http'
import { request as httpsRequest, type Agent as HttpsAgent } from 'node:https'
import { setTimeout as sleep } from 'node:timers/promises'
import { crc32 } from 'node:zlib'
import { PutObjectCommand, type S3Client } from '@aws-sdk/client-s3'
import { SignatureV4 } from '@smithy/signature-v4'
import { UrlGuardError } from '../../../contracts/url-guard-fetch.js'

/** Where a bucket's objects are PUT, as the SDK would send them. */
export interface BucketAddress {
  protocol: 'http:' | 'https:'
  hostname: string
  port: number | undefined
  /** The path before an object's encoded key, ending in `/`: `/bucket/` path-style, `/` virtual-hosted (after any base path of the endpoint). */
  pathPrefix: string
  signingRegion: string
}

/** A non-2xx answer of the store, with S3's error code (`<Code>`) when it sent one. */
export class S3RequestError extends Error {
  override readonly name = 'S3RequestError'
  constructor(
    readonly status: number,
    /** S3's error code when it is one (letters, digits and dots), else `HTTP <status>`. */
    readonly code: string,
    message: string,
  ) {
    super(message)
  }
}

/** The key the address probe asks the SDK about; never sent. */
const PROBE_KEY = 'ffkube-address-probe'

/** A PUT answered 5xx or not answered is sent again, up to this many tries in all (the SDK's standard retry mode: 3). */
const ATTEMPTS = 3

/** An error answer is read up to this much, for its code and message. */
const ERROR_BODY_BYTES = 16 * 1024

/**
 * Asks the S3 client where it would PUT an object of `bucket`, without
 * sending anything: a PutObject whose build step ends the chain. Null when
 * the SDK would sign it with anything but plain SigV4 for `s3` (S3 Express,
 * multi-region access points): those PUTs stay on the SDK.
 */
export async function addressOf(client: S3Client, bucket: string): Promise<BucketAddress | null> {
  let address: BucketAddress | null = null
  const command = new PutObjectCommand({ Bucket: bucket, Key: PROBE_KEY, Body: new Uint8Array(0) })
  command.middlewareStack.add(
    (_next, context) => async (args) => {
      const request = args.request as { protocol: string; hostname: string; port?: number; path: string }
      const schemes = (context.endpointV2?.properties?.authSchemes ?? []) as Array<{ name?: string; signingName?: string; signingRegion?: string }>
      const scheme = schemes[0]
      const plainSigV4 = scheme === undefined || (scheme.name === 'sigv4' && (scheme.signingName ?? 's3') === 's3')
      if (plainSigV4 && request.path.endsWith(`/${PROBE_KEY}`) && (request.protocol === 'http:' || request.protocol === 'https:')) {
        address = {
          protocol: request.protocol,
          hostname: request.hostname,
          port: request.port,
          pathPrefix: request.path.slice(0, -PROBE_KEY.length),
          signingRegion: scheme?.signingRegion ?? (await client.config.region()),
        }
      }
      return { output: { $metadata: {} }, response: undefined }
    },
    // Last of the build step: the endpoint, the bucket's place and the key's path are set; nothing is signed or sent.
    { step: 'build', priority: 'low', name: 'ffkubeAddressProbe' },
  )
  await client.send(command)
  return address
}

/** An object key as the SDK puts it in a path: each segment URI-encoded, `!'()*` too, `/` kept. */
export function encodeKey(key: string): string {
  return key
    .split('/')
    .map((segment) => encodeURIComponent(segment).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`))
    .join('/')
}

/** node:crypto behind the hash interface the signer takes (the SDK's own is the same over node:crypto). */
class NodeSha256 {
  readonly #hash: Hash | Hmac
  constructor(secret?: string | ArrayBuffer | ArrayBufferView) {
    const key = typeof secret === 'string' || secret === undefined ? secret : ArrayBuffer.isView(secret) ? new Uint8Array(secret.buffer, secret.byteOffset, secret.byteLength) : new Uint8Array(secret)
    this.#hash = key === undefined ? createHash('sha256') : createHmac('sha256', key)
  }
  update(data: string | Uint8Array): void {
    this.#hash.update(data)
  }
  digest(): Promise<Uint8Array> {
    return Promise.resolve(new Uint8Array(this.#hash.digest()))
  }
  reset(): void {
    throw new Error('not used by the signer')
  }
}

/** `x-amz-checksum-crc32`: the big-endian CRC32 of the body, base64. */
export function crc32Header(body: Uint8Array): string {
  const sum = Buffer.alloc(4)
  sum.writeUInt32BE(crc32(body))
  return sum.toString('base64')
}

type Credentials = { accessKeyId: string; secretAccessKey: string; sessionToken?: string }

/** PUTs of bytes in memory to one bucket. */
export interface LeanPut {
  put(key: string, body: Buffer, contentType: string | null): Promise<void>
}

/** The agents PUTs go out on: the store's, kept alive (and guarded for a customer's endpoint). */
export interface LeanAgents {
  httpAgent: HttpAgent
  httpsAgent: HttpsAgent
}

export function leanPut(address: BucketAddress, credentials: Credentials, agents: LeanAgents, pause: (ms: number) => Promise<unknown> = sleep): LeanPut {
  const signer = new SignatureV4({ service: 's3', region: address.signingRegion, credentials, sha256: NodeSha256, uriEscapePath: false, applyChecksum: false })
  const host = address.port === undefined ? address.hostname : `${address.hostname}:${address.port}`
  const send = address.protocol === 'https:' ? httpsRequest : httpRequest
  const agent = address.protocol === 'https:' ? agents.httpsAgent : agents.httpAgent

  const attempt = async (path: string, body: Buffer, headers: Record<string, string>): Promise<void> => {
    // Signed again on every try: the signature carries the time.
    const signed = await signer.sign({ method: 'PUT', protocol: address.protocol, hostname: address.hostname, port: address.port, path, query: {}, headers: { ...headers } })
    const response = await new Promise<IncomingMessage>((resolve, reject) => {
      const request = send({ agent, method: 'PUT', host: address.hostname, port: address.port, path, headers: signed.headers }, resolve)
      request.on('error', reject)
      request.end(body)
    })
    const status = response.statusCode ?? 0
    if (status >= 200 && status < 300) {
      response.resume()
      await new Promise((resolve) => response.once('end', resolve).once('close', resolve))
      return
    }
    throw await errorOf(response, status)
  }

  return {
    put: async (key, body, contentType) => {
      const path = `${address.pathPrefix}${encodeKey(key)}`
      const headers: Record<string, string> = {
        host,
        'content-length': String(body.length),
        'x-amz-content-sha256': 'UNSIGNED-PAYLOAD',
        'x-amz-checksum-crc32': crc32Header(body),
        'user-agent': 'ffkube-runner',
        ...(contentType ? { 'content-type': contentType } : {}),
      }
      for (let tried = 1; ; tried++) {
        try {
          return await attempt(path, body, headers)
        } catch (error) {
          if (tried >= ATTEMPTS || !transient(error)) throw error
          // The SDK's standard backoff: full jitter on 100 ms doubled per try.
          await pause(Math.random() * 100 * 2 ** (tried - 1))
        }
      }
    },
  }
}

/**
 * Worth sending again: the store's 5xx (SlowDown is a 503), its
 * RequestTimeout, or no answer at all (a kept-alive socket the store closed
 * as it was reused). Not: a refused address (the guard), any other 4xx.
 */
function transient(error: unknown): boolean {
  if (error instanceof UrlGuardError) return false
  if (error instanceof S3RequestError) return error.status >= 500 || error.code === 'RequestTimeout'
  return true
}

async function errorOf(response: IncomingMessage, status: number): Promise<S3RequestError> {
  const chunks: Buffer[] = []
  let length = 0
  for await (const chunk of response as AsyncIterable<Buffer>) {
    if (length < ERROR_BODY_BYTES) chunks.push(chunk)
    length += chunk.length
  }
  const text = Buffer.concat(chunks).toString('utf8', 0, ERROR_BODY_BYTES)
  const code = /<Code>([A-Za-z][A-Za-z0-9.]{0,63})<\/Code>/.exec(text)?.[1] ?? `HTTP ${status}`
  const message = /<Message>([^<]{0,300})<\/Message>/.exec(text)?.[1]
  return new S3RequestError(status, code, message ? `${code}: ${message}` : code)
}
