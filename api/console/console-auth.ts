import type { FastifyReply, FastifyRequest } from 'fastify'
import type { AccountDocument, AccountRepository, AuthenticatedAccount } from '../accounts/account-repository.js'
import type { Clock } from '../clock.js'
import { ForbiddenError } from '../errors/api-errors.js'
import { isCrossSite, isSafeMethod } from './request-origin.js'
import type { SessionDocument, SessionRepository } from './session-repository.js'
import { setSessionCookie } from './session-cookie.js'
import { cookieValue, CSRF_HEADER, csrfTokenOf, sameSecret, SECRET_PATTERN, SESSION_COOKIE } from './session-tokens.js'

/** Who a request with a live console session cookie acts for. */
export interface ConsoleCaller {
  /** As request.account: rate limits count against the key the session was opened with. */
  account: AuthenticatedAccount
  accountDoc: AccountDocument
  session: SessionDocument
  /** The cookie's value, to derive the CSRF token from and to end the session with. */
  sessionId: string
}

/**
 * Console sessions as a way to authenticate: the cookie names a live session,
 * a request that changes state also carries the session's CSRF token in
 * X-CSRF-Token, and no request with the cookie may come from another site.
 * Used by the console's own routes and by /api/v1 when no X-API-KEY is sent.
 */
export class ConsoleAuth {
  constructor(
    private readonly sessions: SessionRepository,
    private readonly accounts: AccountRepository,
    private readonly now: Clock,
  ) {}

  /** Renews the cookie to the session's new expiry (it slides with each use). */
  renewCookie(request: FastifyRequest, reply: FastifyReply, caller: ConsoleCaller): void {
    setSessionCookie(request, reply, caller.sessionId, caller.session, this.now)
  }

  /** True when the request carries a session cookie at all (live or not). */
  hasCookie(request: FastifyRequest): boolean {
    return cookieValue(request.headers.cookie, SESSION_COOKIE) !== null
  }

  /**
   * The caller of a request with a session cookie; null when there is no
   * cookie or its session has ended. Throws 403 FORBIDDEN for a request from
   * another site, and for one that changes state without the CSRF token.
   */
  async authenticate(request: FastifyRequest): Promise<ConsoleCaller | null> {
    const sessionId = cookieValue(request.headers.cookie, SESSION_COOKIE)
    if (sessionId === null || !SECRET_PATTERN.test(sessionId)) return null
    if (isCrossSite(request)) throw new ForbiddenError('a console session cannot be used from another site')
    if (!isSafeMethod(request.method)) {
      const presented = request.headers[CSRF_HEADER]
      if (typeof presented !== 'string' || !sameSecret(presented, csrfTokenOf(sessionId))) {
        throw new ForbiddenError('X-CSRF-Token: missing or wrong; a console request that changes state must carry the token GET /console/api/session returns')
      }
    }
    const session = await this.sessions.use(sessionId, this.now())
    if (!session) return null
    // Revoking the key a session was opened with ends the session on its next request.
    if (session.key_id !== null && !(await this.accounts.isKeyActive(session.key_id))) return null
    const accountDoc = await this.accounts.findAccount(session.account_id)
    if (!accountDoc) return null
    return {
      // A link session has no key: it counts against the account. No ':' in it: the counter is a NATS KV key, which may not hold one.
      account: { id: accountDoc._id, plan: accountDoc.plan, keyId: session.key_id ?? `console-${accountDoc._id}` },
      accountDoc,
      session,
      sessionId,
    }
  }
}
