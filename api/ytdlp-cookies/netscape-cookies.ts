/**
 * Reads a Netscape cookies.txt (what browser "cookies.txt" exports and
 * `yt-dlp --cookies` use): one cookie per line, seven tab-separated fields
 * `domain, include-subdomains, path, secure, expires, name, value`, `#`
 * comments, and the `#HttpOnly_` domain prefix curl and browsers write.
 *
 * Strict on purpose: yt-dlp skips a line it cannot read with a warning that
 * quotes the line, so a loose file would print a cookie into the command's
 * log. Every rejection names the line and the field, never their content.
 */

/** The largest cookies.txt accepted, in characters (a full browser export for one site is a few kB). */
export const MAX_COOKIES_TXT_CHARS = 128 * 1024

/** The first line yt-dlp's reader (Python's MozillaCookieJar) requires. */
export const NETSCAPE_HEADER = '# Netscape HTTP Cookie File'

const HTTP_ONLY_PREFIX = '#HttpOnly_'
const FIELDS = 7
const DOMAIN = /^\.?[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*$/
const BOOLEAN = /^(TRUE|FALSE)$/
const EXPIRES = /^\d{0,12}$/
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/

/** What the service keeps of an uploaded file: the text yt-dlp will read, and what may be shown of it. */
export interface CookieJarText {
  /** The header, then the cookie lines as uploaded (comments and blank lines dropped). */
  text: string
  cookieCount: number
  /** The distinct domains, lower case, without a leading dot, sorted. */
  domains: string[]
}

/** A cookies.txt that is not one; the message names the line and the field, never a value. */
export class CookieFileError extends Error {
  override readonly name = 'CookieFileError'
}

/** Validates and normalises a cookies.txt; throws CookieFileError on anything else. */
export function parseNetscapeCookies(input: string): CookieJarText {
  if (input.length > MAX_COOKIES_TXT_CHARS) throw new CookieFileError(`is ${input.length} characters, more than the ${MAX_COOKIES_TXT_CHARS} accepted`)
  const start = input.trimStart()[0]
  if (start === '[' || start === '{') throw new CookieFileError('looks like JSON; a Netscape cookies.txt is wanted (one cookie per line, 7 tab-separated fields), as "cookies.txt" browser extensions export')
  const lines: string[] = []
  const domains = new Set<string>()
  input.split('\n').forEach((raw, index) => {
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw
    if (line.trim() === '' || (line.startsWith('#') && !line.startsWith(HTTP_ONLY_PREFIX))) return
    domains.add(checkedDomain(line, index + 1))
    lines.push(line)
  })
  if (lines.length === 0) throw new CookieFileError('holds no cookie line (7 tab-separated fields: domain, include-subdomains, path, secure, expires, name, value)')
  return { text: `${NETSCAPE_HEADER}\n${lines.join('\n')}\n`, cookieCount: lines.length, domains: [...domains].sort() }
}

/** Checks one cookie line; returns its domain as shown by GET. */
function checkedDomain(line: string, lineNumber: number): string {
  const where = `line ${lineNumber}`
  const fields = line.split('\t')
  if (fields.length !== FIELDS) throw new CookieFileError(`${where} has ${fields.length} tab-separated field${fields.length === 1 ? '' : 's'}; a cookie line has ${FIELDS}: domain, include-subdomains, path, secure, expires, name, value`)
  const [rawDomain, subdomains, path, secure, expires, name, value] = fields as [string, string, string, string, string, string, string]
  const domain = rawDomain.startsWith(HTTP_ONLY_PREFIX) ? rawDomain.slice(HTTP_ONLY_PREFIX.length) : rawDomain
  if (!DOMAIN.test(domain)) throw new CookieFileError(`${where}: the domain (field 1) is not a host name`)
  if (!BOOLEAN.test(subdomains)) throw new CookieFileError(`${where}: include-subdomains (field 2) must be TRUE or FALSE`)
  if (!path.startsWith('/') || CONTROL.test(path)) throw new CookieFileError(`${where}: the path (field 3) must start with /`)
  if (!BOOLEAN.test(secure)) throw new CookieFileError(`${where}: secure (field 4) must be TRUE or FALSE`)
  if (!EXPIRES.test(expires)) throw new CookieFileError(`${where}: expires (field 5) must be a Unix time in seconds, or empty for a session cookie`)
  if (name === '' || CONTROL.test(name)) throw new CookieFileError(`${where}: the name (field 6) must be non-empty, without control characters`)
  if (CONTROL.test(value)) throw new CookieFileError(`${where}: the value (field 7) holds a control character`)
  return domain.replace(/^\./, '').toLowerCase()
}
