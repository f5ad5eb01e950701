/**
 * The storage_url of a managed file, both ways: issued, a GET of its object
 * presigned with the service's credentials, so a client or a later command
 * can read it without an API key; and recognised, when it comes back as a
 * command input.
 *
 * Issued fast when there are many (a multi-file output's members).
 * getSignedUrl resolves the endpoint and runs the client's whole middleware
 * stack for every URL: about 1.5 ms each on the development machine, so a
 * 360-segment HLS ladder spent 0.6 s of its SUCCESS in signing. The request
 * it signs differs from one key to the next only in its path, so
 * PresignedGets builds that request once, from one URL getSignedUrl
 * presigned, and signs each key with S3RequestPresigner, the signer
 * getSignedUrl itself uses. The URLs are the ones getSignedUrl gives for the
 * same key and signing time (test/unit/presigned-gets.test.ts checks it),
 * which matters: ManagedUrls recognises a storage_url by signing it again
 * with getSignedUrl.
 *
 * Recognised because the managed bucket may sit on loopback or a private
 * network (local mode's versitygw, an in-cluster store) that the URL guard
 * rightly refuses, while the spec lets a stored file's storage_url be a
 * command input. So a URL of the managed bucket is never fetched as an
 * ordinary URL: it is usable only when its signature is the one this
 * service would compute for that key and time, and it has not expired. Any
 * other URL, including one of another bucket on the same endpoint or a
 * look-alike host, is left to the URL guard.
 */
import { timingSafeEqual } from 'node:crypto'
import { GetObjectCommand, type S3Client } from '@aws-sdk/client-s3'
import { getSignedUrl, S3RequestPresigner } from '@aws-sdk/s3-request-presigner'
import { systemClock, type Clock } from '../clock.js'

/** The query parameters SigV4 adds; any other but `x-id` is a header the signer hoisted into the query. */
const SIGV4_PARAMS = new Set(['X-Amz-Algorithm', 'X-Amz-Content-Sha256', 'X-Amz-Credential', 'X-Amz-Date', 'X-Amz-Expires', 'X-Amz-Signature', 'X-Amz-SignedHeaders', 'X-Amz-Security-Token', 'x-id'])
const PROBE_KEY = 'k'

/** SigV4's longest validity: a storage_url works for seven days after it is signed. */
export const STORAGE_URL_TTL_SECONDS = 7 * 24 * 3600

/** Presigns a GET of an object in the managed bucket (a local computation, no request). */
export function presignGet(s3: S3Client, bucket: string, key: string): Promise<string> {
  return getSignedUrl(s3, new GetObjectCommand({ Bucket: bucket, Key: key }), { expiresIn: STORAGE_URL_TTL_SECONDS })
}

/** Where the bucket's presigned GETs point: a placeholder key's URL, and its path before the key (a local computation, no request). */
async function probe(s3: S3Client, bucket: string): Promise<{ url: URL; pathPrefix: string }> {
  const url = new URL(await presignGet(s3, bucket, PROBE_KEY))
  return { url, pathPrefix: url.pathname.slice(0, -PROBE_KEY.length) }
}

/** RFC 3986 escaping as the SDK writes URIs: encodeURIComponent, and `!'()*` too. */
function escapeUri(text: string): string {
  return encodeURIComponent(text).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)
}

/** An object key as a URL path, each segment escaped and the slashes kept (the SDK's greedy `{Key+}` label). */
function keyPath(key: string): string {
  return key.split('/').map(escapeUri).join('/')
}

interface RequestTemplate {
  protocol: string
  hostname: string
  port: number | undefined
  host: string
  pathPrefix: string
  hoisted: Record<string, string>
  region: string
  service: string
}

export class PresignedGets {
  private constructor(
    private readonly template: RequestTemplate,
    private readonly presigner: S3RequestPresigner,
    private readonly expiresIn: number,
  ) {}

  /** A signer for `bucket`'s objects, valid `expiresIn` seconds from each signing. */
  static async of(s3: S3Client, bucket: string, expiresIn: number): Promise<PresignedGets> {
    const { url, pathPrefix } = await probe(s3, bucket)
    const [, , region, service] = (url.searchParams.get('X-Amz-Credential') ?? '').split('/')
    if (!region || !service) throw new Error('a presigned URL of the managed bucket has no credential scope')
    const hoisted = Object.fromEntries([...url.searchParams].filter(([name]) => !SIGV4_PARAMS.has(name)))
    const template: RequestTemplate = {
      protocol: url.protocol,
      hostname: url.hostname,
      port: url.port === '' ? undefined : Number(url.port),
      host: url.host,
      pathPrefix,
      hoisted,
      region,
      service,
    }
    const presigner = new S3RequestPresigner({ ...s3.config, region: () => Promise.resolve(region), signingName: service })
    return new PresignedGets(template, presigner, expiresIn)
  }

  /** The presigned GET of `key`, signed at `signingDate` (now by default). */
  async url(key: string, signingDate = new Date()): Promise<string> {
    const t = this.template
    const request = {
      method: 'GET',
      protocol: t.protocol,
      hostname: t.hostname,
      ...(t.port === undefined ? {} : { port: t.port }),
      path: `${t.pathPrefix}${keyPath(key)}`,
      query: { 'x-id': 'GetObject' } as Record<string, string>,
      headers: { host: t.host, ...t.hoisted } as Record<string, string>,
    }
    const signed = await this.presigner.presign(request as never, { expiresIn: this.expiresIn, signingDate, signingRegion: t.region, signingService: t.service })
    const params = signed.query ?? {}
    const query = Object.keys(params)
      .sort()
      .map((name) => `${escapeUri(name)}=${escapeUri(String(params[name]))}`)
      .join('&')
    return `${t.protocol}//${t.host}${signed.path}?${query}`
  }
}

/** A URL of the managed bucket that is not one this service issued, or no longer valid; the message says why. */
export class ManagedUrlRefused extends Error {
  override readonly name = 'ManagedUrlRefused'
}

/** SigV4's query-string names, as S3 presigned URLs carry them. */
const SIGNATURE = 'X-Amz-Signature'
const DATE = 'X-Amz-Date'
const EXPIRES = 'X-Amz-Expires'

/** `20261124T071800Z` → a Date; null when it is not that shape. */
function parseAmzDate(raw: string | null): Date | null {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(raw ?? '')
  if (!m) return null
  const date = new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4]), Number(m[5]), Number(m[6])))
  return Number.isNaN(date.getTime()) ? null : date
}

/** Object keys the service writes: no empty, `.` or `..` segment, nothing a path could be made to escape with. */
function keyProblem(key: string): string | null {
  if (key === '') return 'it names no object'
  if (key.split('/').some((segment) => segment === '' || segment === '.' || segment === '..')) return 'its object key has an empty, "." or ".." segment'
  return null
}

export class ManagedUrls {
  #base: Promise<{ origin: string; path: string }> | null = null

  constructor(
    private readonly s3: S3Client,
    private readonly bucket: string,
    private readonly now: Clock = systemClock,
  ) {}

  /**
   * The object key a URL of the managed bucket names, when the URL is a GET
   * this service signed and it is still valid; null for a URL of anything
   * else. Throws ManagedUrlRefused for a URL of the managed bucket that is
   * not (a tampered or foreign signature, an expired one, a bad key).
   */
  async objectKey(raw: string): Promise<string | null> {
    let url: URL
    try {
      url = new URL(raw)
    } catch {
      return null
    }
    const base = await this.#ourBase()
    if (url.origin !== base.origin || !url.pathname.startsWith(base.path)) return null
    if (url.username !== '' || url.password !== '') throw new ManagedUrlRefused('it is a storage_url of this service with user info added')
    let key: string
    try {
      key = url.pathname.slice(base.path.length).split('/').map(decodeURIComponent).join('/')
    } catch {
      throw new ManagedUrlRefused('it is a storage_url of this service with a malformed object key')
    }
    const problem = keyProblem(key)
    if (problem) throw new ManagedUrlRefused(`it is a storage_url of this service, but ${problem}`)
    await this.#verify(url, key)
    return key
  }

  /** Checks expiry first (cheap and the likeliest fault), then the signature against a fresh one for the same key and time. */
  async #verify(url: URL, key: string): Promise<void> {
    const given = url.searchParams
    const signedAt = parseAmzDate(given.get(DATE))
    const expires = Number(given.get(EXPIRES))
    const signature = given.get(SIGNATURE)
    if (!signedAt || !Number.isInteger(expires) || expires <= 0 || !signature) {
      throw new ManagedUrlRefused('it is a storage_url of this service without a complete signature')
    }
    if (signedAt.getTime() + expires * 1000 <= this.now().getTime()) {
      throw new ManagedUrlRefused(`it is a storage_url of this service that expired at ${new Date(signedAt.getTime() + expires * 1000).toISOString()}`)
    }
    let expected: URL
    try {
      expected = new URL(await getSignedUrl(this.s3, new GetObjectCommand({ Bucket: this.bucket, Key: key }), { expiresIn: expires, signingDate: signedAt }))
    } catch {
      // SigV4 refuses lifetimes over seven days: no URL of ours has one.
      throw new ManagedUrlRefused('it is a storage_url of this service with a lifetime this service never signs')
    }
    const theirs = Buffer.from(signature)
    const ours = Buffer.from(expected.searchParams.get(SIGNATURE) ?? '')
    const sameSignature = theirs.length === ours.length && timingSafeEqual(theirs, ours)
    // Every other parameter and the path exactly as issued: nothing added, nothing re-encoded.
    const rest = (params: URLSearchParams) => [...params].filter(([name]) => name !== SIGNATURE).map(([name, value]) => `${name}=${value}`).sort().join('&')
    if (!sameSignature || expected.pathname !== url.pathname || rest(expected.searchParams) !== rest(given)) {
      throw new ManagedUrlRefused('it is a storage_url of this service whose signature does not verify')
    }
  }

  /** Where our URLs point: the origin and path prefix of a presigned GET, computed once (no request is made). */
  #ourBase(): Promise<{ origin: string; path: string }> {
    this.#base ??= probe(this.s3, this.bucket).then(
      ({ url, pathPrefix }) => ({ origin: url.origin, path: pathPrefix }),
      (err: unknown) => {
        // Credentials not loaded yet, say: the next call tries again.
        this.#base = null
        throw err
      },
    )
    return this.#base
  }
}
