import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'

/** The console's session cookie. HttpOnly and SameSite=Strict always; Secure when the request came over https. */
export const SESSION_COOKIE = 'ffkube_console'

/** The header a console request that changes state carries its CSRF token in. */
export const CSRF_HEADER = 'x-csrf-token'

/** 32 random bytes, base64url: a session id or a sign-in link token. */
export function newSecret(): string {
  return randomBytes(32).toString('base64url')
}

/** Sessions and sign-in links are stored under this hash only: a read of the database opens no session. */
export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret).digest('hex')
}

/**
 * The session's CSRF token, derived from the session id: the server recomputes
 * it from the cookie, so nothing more is stored, and it cannot be derived from
 * the stored hash. A page of another origin can read neither.
 */
export function csrfTokenOf(sessionId: string): string {
  return createHash('sha256').update(`ffkube-console-csrf\0${sessionId}`).digest('base64url')
}

/** Constant-time equality of two strings (false when their lengths differ). */
export function sameSecret(a: string, b: string): boolean {
  const left = Buffer.from(a)
  const right = Buffer.from(b)
  return left.length === right.length && timingSafeEqual(left, right)
}

/** A secret as newSecret makes them: 43 base64url characters. */
export const SECRET_PATTERN = /^[A-Za-z0-9_-]{43}$/

/** The value of one cookie in a Cookie header; null when absent. */
export function cookieValue(header: string | undefined, name: string): string | null {
  if (!header) return null
  for (const part of header.split(';')) {
    const eq = part.indexOf('=')
    if (eq < 0) continue
    if (part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim()
  }
  return null
}

/** A Set-Cookie value for the session: `maxAgeSeconds` 0 clears it. */
export function sessionCookie(value: string, maxAgeSeconds: number, secure: boolean): string {
  return [`${SESSION_COOKIE}=${value}`, 'Path=/', `Max-Age=${Math.max(0, Math.floor(maxAgeSeconds))}`, 'HttpOnly', 'SameSite=Strict', ...(secure ? ['Secure'] : [])].join('; ')
}

/**
 * The API key shown in lists: its prefix and last four characters, which are
 * enough to tell keys apart and nowhere near enough to use one.
 */
export function maskApiKey(apiKey: string): string {
  return `ffsk_…${apiKey.slice(-4)}`
}
