/**
 * Recognises the service's own `storage_url`s: presigned GETs of objects in
 * the managed bucket. The spec lets a stored file's storage_url be a command
 * input, but the managed bucket may sit on loopback or a private network
 * (local mode's versitygw, an in-cluster store) that the URL guard rightly
 * refuses. So a URL of the managed bucket is never fetched as an ordinary
 * URL: it is usable only when its signature is the one this service would
 * compute for that key and time, and it has not expired. Any other URL,
 * including one of another bucket on the same endpoint or a look-alike host,
 * is left to the URL guard.
 */
import { timingSafeEqual } from 'node:crypto'
import { GetObjectCommand, type S3Client } from '@aws-sdk/client-s3'
import { getSignedUrl } from '@aws-sdk/s3-request-presigner'
import { systemClock, type Clock } from '../clock.js'

/** A URL of the managed bucket that is not one this service issued, or no longer valid; the message says why. */
export class ManagedUrlRefused extends Error {
  override readonly name = 'ManagedUrlRefused'
}

/** SigV4's query-string names, as S3 presigned URLs carry them. */
const SIGNATURE = 'X-Amz-Signature'
const DATE = 'X-Amz-Date'
const EXPIRES = 'X-Amz-Expires'
const PROBE_KEY = 'k'

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
    this.#base ??= getSignedUrl(this.s3, new GetObjectCommand({ Bucket: this.bucket, Key: PROBE_KEY })).then(
      (signed) => {
        const url = new URL(signed)
        return { origin: url.origin, path: url.pathname.slice(0, -PROBE_KEY.length) }
      },
      (err: unknown) => {
        // Credentials not loaded yet, say: the next call tries again.
        this.#base = null
        throw err
      },
    )
    return this.#base
  }
}
