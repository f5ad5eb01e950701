/**
 * The storage_url of a managed file: a GET of its object, presigned with the
 * service's credentials, so a client (or a later command, see
 * managed-urls.ts) can read it without an API key.
 *
 * Many of them (a multi-file output's members) are signed fast.
 * getSignedUrl resolves the endpoint and runs the client's whole middleware
 * stack for every URL: about 1.5 ms each on the development machine, so a
 * 360-segment HLS ladder spent 0.6 s of its SUCCESS in signing. The request
 * it signs differs from one key to the next only in its path, so this
 * builds that request once, from one URL getSignedUrl presigned, and signs
 * each key with S3RequestPresigner, the signer getSignedUrl itself uses. The
 * URLs are the ones getSignedUrl gives for the same key and signing time
 * (test/unit/presigned-gets.test.ts checks it), which matters: managed-urls.ts
 * recognises a storage_url by signing it again with getSignedUrl.
 */
import { GetObjectCommand, type S3Client } from '@aws-sdk/client-s3'
import { getSignedUrl, S3RequestPresigner } from '@aws-sdk/s3-request-presigner'

/** The query parameters SigV4 adds; any other but `x-id` is a header the signer hoisted into the query. */
const SIGV4_PARAMS = new Set(['X-Amz-Algorithm', 'X-Amz-Content-Sha256', 'X-Amz-Credential', 'X-Amz-Date', 'X-Amz-Expires', 'X-Amz-Signature', 'X-Amz-SignedHeaders', 'X-Amz-Security-Token', 'x-id'])
const PROBE_KEY = 'k'

/** SigV4's longest validity: a storage_url works for seven days after it is signed. */
export const STORAGE_URL_TTL_SECONDS = 7 * 24 * 3600

/** Presigns a GET of an object in the managed bucket (a local computation, no request). */
export function presignGet(s3: S3Client, bucket: string, key: string): Promise<string> {
  return getSignedUrl(s3, new GetObjectCommand({ Bucket: bucket, Key: key }), { expiresIn: STORAGE_URL_TTL_SECONDS })
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
    const probe = new URL(await getSignedUrl(s3, new GetObjectCommand({ Bucket: bucket, Key: PROBE_KEY }), { expiresIn }))
    const [, , region, service] = (probe.searchParams.get('X-Amz-Credential') ?? '').split('/')
    if (!region || !service) throw new Error('a presigned URL of the managed bucket has no credential scope')
    const hoisted = Object.fromEntries([...probe.searchParams].filter(([name]) => !SIGV4_PARAMS.has(name)))
    const template: RequestTemplate = {
      protocol: probe.protocol,
      hostname: probe.hostname,
      port: probe.port === '' ? undefined : Number(probe.port),
      host: probe.host,
      pathPrefix: probe.pathname.slice(0, -PROBE_KEY.length),
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
