import { isIP } from 'node:net'
import type { FastifyBaseLogger, FastifyRequest } from 'fastify'
import type { NatsConnection } from 'nats'
import type { Clock } from '../clock.js'
import { RateLimitedError } from '../errors/api-errors.js'
import { RATE_LIMIT_WINDOW_MS } from '../rate-limit/rate-limits.js'
import { retryAfterSeconds, WindowCounter } from '../rate-limit/window-counter.js'

/** CONSOLE_SIGN_IN_FAILURES_PER_MINUTE's default. */
export const DEFAULT_SIGN_IN_FAILURES_PER_MINUTE = 10

/** The throttle's keys in the rate-limit bucket, apart from the API keys' (`key_…`). */
const KEY_PREFIX = 'console-sign-in'

export interface SignInThrottleOptions {
  /** Where the counters live (NATS KV, shared by every API replica); without it nothing is limited. */
  nats: NatsConnection | undefined
  /** Failed sign-ins per minute per client address; 0 = no limit. */
  limit: number
  now: Clock
  log: FastifyBaseLogger
}

/**
 * Bounds failed console sign-ins (a wrong API key, an unknown or spent link)
 * per client address and minute, so a client cannot try credentials at full
 * speed. Per address only: an attempt names no account (a key is looked up by
 * its hash, a link by its token's), and a per-account bound would let anyone
 * lock an account out of its console.
 *
 * Each attempt is counted as a failure before its credential is checked, and
 * taken back once it signs in: concurrent attempts cannot all slip in under
 * the limit before the first of them is counted. Once an address is over the
 * limit every attempt gets 429 without its credential being checked, a right
 * one too, so the answer says nothing about the credential.
 */
export class SignInThrottle {
  private constructor(
    private readonly counter: WindowCounter | null,
    private readonly limit: number,
    private readonly now: Clock,
  ) {}

  static async open({ nats, limit, now, log }: SignInThrottleOptions): Promise<SignInThrottle> {
    if (!limit) return new SignInThrottle(null, 0, now)
    // Every process that serves the API has NATS (npm start runs its own); an app built without it (tests, the OpenAPI renderer) has nothing to count in.
    if (!nats) {
      log.warn('console sign-in attempts are not limited: no NATS connection to count them in')
      return new SignInThrottle(null, 0, now)
    }
    return new SignInThrottle(await WindowCounter.open(nats, RATE_LIMIT_WINDOW_MS), limit, now)
  }

  /**
   * Runs one sign-in attempt: `check` resolves what the credential signs in
   * to, or null when it signs in to nothing (a failure, which counts). Throws
   * RateLimitedError, without calling `check`, when the request's address has
   * spent its failures for this minute.
   */
  async attempt<T>(request: FastifyRequest, check: () => Promise<T | null>): Promise<T | null> {
    const counter = this.counter
    if (!counter) return check()
    const key = `${KEY_PREFIX}.${addressKey(request.ip)}`
    const at = this.now()
    let hit
    try {
      hit = await counter.hit(key, at)
    } catch (error) {
      // As the API's rate limits: a counter outage must not lock every user out of the console.
      request.log.warn({ err: error }, 'sign-in counter unavailable; attempt not counted')
      return check()
    }
    if (hit.count > this.limit) {
      const retryAfter = retryAfterSeconds(hit.windowEndsAt, at)
      request.log.warn({ client_address: request.ip }, 'console sign-in refused: too many failed attempts from this address')
      throw new RateLimitedError(`too many failed sign-in attempts from this address (at most ${this.limit} a minute); retry in ${retryAfter} s`, retryAfter)
    }
    let failed = false
    try {
      const signedIn = await check()
      failed = signedIn === null
      return signedIn
    } finally {
      // A sign-in, or an attempt that ended in an error of ours, is no failed guess.
      if (!failed) await counter.takeBack(key, at).catch((error: unknown) => request.log.warn({ err: error }, 'sign-in counter unavailable; attempt left counted'))
    }
  }
}

/**
 * What one client address is counted under, as a NATS KV key token: an IPv4
 * address (also one mapped into IPv6) as itself, an IPv6 address by its /64,
 * the block one host or customer line usually gets, so an attacker cannot
 * take a fresh address of its /64 for each guess. Pure.
 */
export function addressKey(ip: string | undefined): string {
  const address = (ip ?? '').replace(/%.*$/, '')
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)
  if (mapped) return `ipv4_${mapped[1]}`
  if (isIP(address) === 4) return `ipv4_${address}`
  if (isIP(address) === 6) return `ipv6_${ipv6Groups(address).slice(0, 4).join('_')}/64`
  // No address (a Unix socket): all such clients share one counter.
  return 'unknown'
}

/** The eight hextets of a valid IPv6 address, `::` expanded, without leading zeros. */
function ipv6Groups(address: string): string[] {
  const [head = '', tail] = address.split('::')
  const headGroups = head === '' ? [] : head.split(':')
  const tailGroups = tail === undefined || tail === '' ? [] : tail.split(':')
  // A trailing dotted quad is the last two hextets; it never reaches the first four.
  const width = (groups: string[]) => groups.reduce((n, group) => n + (group.includes('.') ? 2 : 1), 0)
  const zeros = tail === undefined ? [] : Array<string>(8 - width(headGroups) - width(tailGroups)).fill('0')
  return [...headGroups, ...zeros, ...tailGroups].map((group) => (group.includes('.') ? group : parseInt(group, 16).toString(16)))
}
