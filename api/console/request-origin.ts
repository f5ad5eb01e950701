import type { IncomingHttpHeaders } from 'node:http'

/** What isCrossSite reads of a request: its headers, and its host as Fastify resolves it. */
export interface RequestSite {
  headers: IncomingHttpHeaders
  /** The Host header, or X-Forwarded-Host when TRUST_PROXY trusts the peer that sent it. */
  host: string
}

/**
 * Whether a browser says the request came from another site: `Sec-Fetch-Site:
 * cross-site`, or an `Origin` whose host is not the one the request was sent
 * to (its Host, or the host a trusted proxy says it was sent to; an untrusted
 * peer's X-Forwarded-Host counts for nothing). Requests without either header
 * (curl, scripts) are not cross-site: they carry no ambient cookie a page of
 * another site could be borrowing. Pure.
 */
export function isCrossSite({ headers, host }: RequestSite): boolean {
  const fetchSite = headers['sec-fetch-site']
  if (fetchSite === 'cross-site') return true
  const origin = headers.origin
  if (origin === undefined) return false
  // An opaque origin (a sandboxed frame, a data: URL) is never this site.
  if (origin === 'null') return true
  let parsed: URL
  try {
    parsed = new URL(origin)
  } catch {
    return true
  }
  return ![headers.host, host].some((candidate) => candidate !== undefined && candidate !== '' && sameHost(parsed, candidate))
}

/** Whether a Host header names the origin's host and port (a default port written out or not). */
function sameHost(origin: URL, host: string): boolean {
  try {
    return new URL(`${origin.protocol}//${host}`).host === origin.host
  } catch {
    return false
  }
}

/** Methods that change nothing, which need no CSRF token. */
export function isSafeMethod(method: string): boolean {
  return method === 'GET' || method === 'HEAD' || method === 'OPTIONS'
}
