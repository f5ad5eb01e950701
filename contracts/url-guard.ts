/**
 * The private-network rule of DESIGN.md as pure functions: which IP addresses
 * a user-supplied URL may reach, and which URLs are worth resolving at all.
 * The I/O half (DNS, pinned connections, redirects) is url-guard-fetch.ts.
 *
 * Built on ipaddr.js rather than node's net.BlockList: the rule is "public
 * unicast only", which ipaddr.js expresses directly through its RFC range
 * table (`range() === 'unicast'`), and it can unwrap the IPv6 forms that embed
 * an IPv4 address (mapped, translated, NAT64, 6to4) so the embedded address
 * is judged by the IPv4 rule. A BlockList would need every one of those
 * prefixes spelled out and still could not look inside them.
 */
import ipaddr from 'ipaddr.js'

/** Why an address or URL is refused; null when it is allowed. */
export type AddressVerdict = { forbidden: false } | { forbidden: true; reason: string }

const ALLOWED: AddressVerdict = { forbidden: false }

/** Prefixes whose low 32 bits are an IPv4 address a packet ends up at. */
const EMBEDS_IPV4: ReadonlyArray<[string, number]> = [
  ['::ffff:0:0', 96], // IPv4-mapped
  ['::ffff:0:0:0', 96], // RFC 6145 translated
  ['64:ff9b::', 96], // RFC 6052 well-known NAT64
  ['::', 96], // deprecated IPv4-compatible
]

function describeV4(address: ipaddr.IPv4): AddressVerdict {
  const range = address.range()
  return range === 'unicast' ? ALLOWED : { forbidden: true, reason: `${address.toString()} is a ${range} address` }
}

/** The IPv4 address embedded in the low 32 bits of an IPv6 address. */
function lowIPv4(address: ipaddr.IPv6): ipaddr.IPv4 {
  const bytes = address.toByteArray()
  return new ipaddr.IPv4(bytes.slice(12, 16))
}

function describeV6(address: ipaddr.IPv6): AddressVerdict {
  const text = address.toString()
  const range = address.range()
  if (range === 'loopback' || range === 'unspecified') return { forbidden: true, reason: `${text} is a ${range} address` }
  for (const [prefix, bits] of EMBEDS_IPV4) {
    if (address.match(ipaddr.IPv6.parse(prefix), bits)) {
      const inner = describeV4(lowIPv4(address))
      return inner.forbidden ? { forbidden: true, reason: `${text} embeds ${inner.reason}` } : ALLOWED
    }
  }
  if (range === '6to4') {
    // 2002:AABB:CCDD::/48 routes to the IPv4 address AA.BB.CC.DD.
    const bytes = address.toByteArray()
    const inner = describeV4(new ipaddr.IPv4(bytes.slice(2, 6)))
    return inner.forbidden ? { forbidden: true, reason: `${text} (6to4) embeds ${inner.reason}` } : ALLOWED
  }
  return range === 'unicast' ? ALLOWED : { forbidden: true, reason: `${text} is a ${range} address` }
}

/**
 * Classifies one IP address (IPv4 or IPv6 text, brackets allowed). Allowed:
 * public unicast only. Forbidden: loopback, RFC 1918, link-local (incl.
 * 169.254.169.254), CGNAT, multicast, broadcast, unspecified, reserved and
 * documentation ranges, IPv6 ULA (incl. fd00:ec2::254), link-local, site-local,
 * Teredo, and any IPv6 form embedding a forbidden IPv4. Unparseable: forbidden.
 */
export function classifyAddress(text: string): AddressVerdict {
  const bare = text.startsWith('[') && text.endsWith(']') ? text.slice(1, -1) : text
  // Strict forms only: a resolver never returns `0177.0.0.1`, and a URL host is normalised before it gets here.
  if (ipaddr.IPv4.isValidFourPartDecimal(bare)) return describeV4(ipaddr.IPv4.parse(bare))
  if (ipaddr.IPv6.isValid(bare)) {
    const address = ipaddr.IPv6.parse(bare)
    // A zone id (`fe80::1%eth0`) names a local interface: never public.
    if (address.zoneId) return { forbidden: true, reason: `${bare} names a local interface` }
    return describeV6(address)
  }
  return { forbidden: true, reason: `${text} is not an IP address` }
}

/**
 * A URL's host as rules about host names must compare it: without IPv6
 * brackets, lowercase, and without the trailing dot of a fully qualified
 * name, so `localhost.` is `localhost` and `youtube.com.` is `youtube.com`
 * (DNS treats them as the same name).
 */
export function hostName(url: URL): string {
  return url.hostname.replace(/^\[|\]$/g, '').replace(/\.$/, '').toLowerCase()
}

/** Guard options shared by every caller. */
export interface UrlGuardOptions {
  /** ALLOW_PRIVATE_NETWORKS: for local development and tests only. */
  allowPrivateNetworks: boolean
  /** The address rule; injectable so a test can trust one loopback address and no other. */
  classify?: (address: string) => AddressVerdict
}

/** A URL the guard refuses before any connection. */
export type UrlVerdict =
  | { ok: true; url: URL; host: string; literalAddress: string | null }
  | { ok: false; code: 'INVALID_URL' | 'FORBIDDEN_ADDRESS'; reason: string }

/**
 * Checks a URL before resolving it: http(s) only, no credentials in it, and a
 * literal IP host judged at once. WHATWG URL parsing has already turned
 * `2130706433`, `0177.0.0.1` and `0x7f.1` into `127.0.0.1`, so those forms
 * are judged as what they mean.
 */
export function checkUrl(raw: string, options: UrlGuardOptions): UrlVerdict {
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    return { ok: false, code: 'INVALID_URL', reason: `"${raw}" is not a valid URL` }
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    return { ok: false, code: 'INVALID_URL', reason: `${url.protocol} URLs are not allowed, only http and https` }
  }
  if (url.username !== '' || url.password !== '') {
    return { ok: false, code: 'INVALID_URL', reason: 'URLs with credentials are not allowed' }
  }
  const host = hostName(url)
  if (host === '') return { ok: false, code: 'INVALID_URL', reason: 'the URL has no host' }
  const literal = ipaddr.isValid(host) && (ipaddr.IPv6.isValid(host) || ipaddr.IPv4.isValidFourPartDecimal(host)) ? host : null
  if (literal !== null && !options.allowPrivateNetworks) {
    const verdict = (options.classify ?? classifyAddress)(literal)
    if (verdict.forbidden) return { ok: false, code: 'FORBIDDEN_ADDRESS', reason: verdict.reason }
  }
  return { ok: true, url, host, literalAddress: literal }
}
