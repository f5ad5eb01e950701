/**
 * The pure rules a storage destination's fields must follow. Each returns the
 * normalised value or throws ValidationError naming the field and the reason.
 */
import ipaddr from 'ipaddr.js'
import { hostName } from '../../contracts/url-guard.js'
import { ValidationError } from '../errors/api-errors.js'

/** Host names that always mean this machine, whatever DNS says. */
function isLocalHostName(host: string): boolean {
  return host === 'localhost' || host.endsWith('.localhost')
}

function parseUrl(field: string, raw: string): URL {
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    throw new ValidationError(`${field}: must be an absolute URL`)
  }
  if (url.username || url.password) throw new ValidationError(`${field}: must not contain credentials`)
  return url
}

/**
 * endpoint_url: an https:// origin on a host name. Raw IPv4/IPv6 addresses are
 * always rejected (DESIGN.md); http:// and loopback names only with
 * ALLOW_PRIVATE_NETWORKS, for development and tests. Returns the origin.
 */
export function normalizeEndpointUrl(raw: string, allowPrivateNetworks: boolean): string {
  const url = parseUrl('endpoint_url', raw)
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && allowPrivateNetworks)) {
    throw new ValidationError('endpoint_url: must use https://')
  }
  const host = hostName(url)
  // The URL parser already turns 0x7f.1 and 2130706433 into dotted IPv4.
  if (ipaddr.isValid(host)) throw new ValidationError('endpoint_url: must name a host, not a raw IP address')
  if (!allowPrivateNetworks && isLocalHostName(host)) throw new ValidationError('endpoint_url: must not name this machine')
  if (url.pathname !== '/' || url.search || url.hash) throw new ValidationError('endpoint_url: must have no path, query or fragment')
  return url.origin
}

/** public_base_url: an http(s) URL the outputs are public under; kept without a trailing slash. */
export function normalizePublicBaseUrl(raw: string): string {
  const url = parseUrl('public_base_url', raw)
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new ValidationError('public_base_url: must use http:// or https://')
  if (url.search || url.hash) throw new ValidationError('public_base_url: must have no query or fragment')
  return url.href.replace(/\/+$/, '')
}

const BUCKET = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/

/** bucket: S3's general-purpose bucket naming rules. */
export function validateBucket(bucket: string): string {
  if (!BUCKET.test(bucket)) {
    throw new ValidationError('bucket: must be 3 to 63 lowercase letters, digits, dots or hyphens, starting and ending with a letter or digit')
  }
  if (bucket.includes('..')) throw new ValidationError('bucket: must not contain two adjacent dots')
  if (ipaddr.IPv4.isValidFourPartDecimal(bucket)) throw new ValidationError('bucket: must not look like an IP address')
  if (bucket.startsWith('xn--') || bucket.startsWith('sthree-') || bucket.endsWith('-s3alias') || bucket.endsWith('--ol-s3')) {
    throw new ValidationError('bucket: uses a prefix or suffix S3 reserves')
  }
  return bucket
}

const REGION = /^[A-Za-z0-9_-]{1,64}$/

/** region: a signing region such as `us-east-1` or `auto`. */
export function validateRegion(region: string): string {
  if (!REGION.test(region)) throw new ValidationError('region: must be 1 to 64 letters, digits, hyphens or underscores')
  return region
}

const PREFIX_MAX = 512

/**
 * prefix: leading and trailing slashes removed, as the spec says; empty, `.`
 * and `..` segments rejected so `{prefix}/{command_id}/{filename}` is one
 * unambiguous key.
 */
export function normalizePrefix(raw: string): string {
  const prefix = raw.replace(/^\/+|\/+$/g, '')
  if (prefix === '') return ''
  if (prefix.length > PREFIX_MAX) throw new ValidationError(`prefix: must be at most ${PREFIX_MAX} characters`)
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f\\]/.test(prefix)) throw new ValidationError('prefix: must not contain control characters or backslashes')
  if (prefix.split('/').some((segment) => segment === '' || segment === '.' || segment === '..')) {
    throw new ValidationError('prefix: must not contain empty, "." or ".." segments')
  }
  return prefix
}

/** name: a label, unique among the account's active destinations (the repository enforces that). */
export function normalizeName(raw: string): string {
  const name = raw.trim()
  if (name === '') throw new ValidationError('name: must not be blank')
  return name
}
