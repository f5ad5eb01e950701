import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { AccountDocument } from '../accounts/account-repository.js'
import { planFeatures } from '../accounts/plans.js'
import type { Clock } from '../clock.js'
import { ForbiddenError, UnauthorizedError } from '../errors/api-errors.js'
import { errorResponses } from '../errors/error-response.js'
import type { RateLimits } from '../rate-limit/rate-limits.js'
import type { ConsoleAuth, ConsoleCaller } from './console-auth.js'
import { isCrossSite } from './request-origin.js'
import { ConsoleSessionResponse, SignInWithKeyBody, SignInWithLinkBody, SignOutResponse } from './schemas.js'
import { clearSessionCookie, setSessionCookie } from './session-cookie.js'
import type { SessionDocument, SessionRepository } from './session-repository.js'
import { csrfTokenOf } from './session-tokens.js'
import type { SignInLinkRepository } from './sign-in-link-repository.js'
import type { SignInThrottle } from './sign-in-throttle.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by requireConsoleSession on the console's routes that need a signed-in account. */
    consoleCaller: ConsoleCaller
  }
}

export interface ConsoleRouteOptions {
  consoleAuth: ConsoleAuth
  sessions: SessionRepository
  signInLinks: SignInLinkRepository
  /** Bounds failed sign-ins per client address. */
  signInThrottle: SignInThrottle
  rateLimits: RateLimits
  now: Clock
}

const tags = ['console']
const sessionCookieSecurity = [{ consoleSession: [] }]

/** The console session as the session routes answer it. */
export function sessionResponse(account: AccountDocument, session: SessionDocument, sessionId: string, rateLimits: RateLimits): ConsoleSessionResponse {
  const features = planFeatures(account.plan)
  return {
    account_id: account._id,
    account_name: account.name,
    plan: account.plan,
    features: { video_downloads: features.videoDownloads, business_features: features.businessFeatures },
    rate_limit_per_minute: rateLimits[account.plan],
    signed_in_with: session.signed_in_with,
    key_id: session.key_id,
    csrf_token: csrfTokenOf(sessionId),
    expires_at: session.expires_at.toISOString(),
  }
}

/**
 * An onRequest hook for the console's signed-in routes: the caller of a live
 * session, or 401 (and the stale cookie cleared). An X-API-KEY is not enough:
 * keys are managed in the console only, as the spec has it.
 */
export function requireConsoleSession(consoleAuth: ConsoleAuth) {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    const caller = await consoleAuth.authenticate(request)
    if (!caller) {
      if (consoleAuth.hasCookie(request)) clearSessionCookie(request, reply)
      throw new UnauthorizedError('sign in to the console first (POST /console/api/session)')
    }
    request.consoleCaller = caller
    consoleAuth.renewCookie(request, reply, caller)
  }
}

/** Sign-in with an API key or a one-time link, the current session, and sign-out. */
export const consoleSessionRoutes: FastifyPluginAsyncTypebox<ConsoleRouteOptions> = async (app, options) => {
  const { sessions, signInLinks, signInThrottle, rateLimits, now } = options

  /** Sign-ins are POSTs with a JSON body from this site only: a page elsewhere cannot sign a visitor in to its own account. */
  const refuseCrossSite = async (request: FastifyRequest) => {
    if (isCrossSite(request)) throw new ForbiddenError('console sign-in from another site is refused')
  }
  const signIn = async (request: FastifyRequest, reply: FastifyReply, account: AccountDocument, keyId: string | null) => {
    const { sessionId, session } = await sessions.open(account._id, { signedInWith: keyId ? 'api_key' : 'sign_in_link', keyId }, now())
    setSessionCookie(request, reply, sessionId, session, now)
    request.log.info({ account_id: account._id, signed_in_with: session.signed_in_with }, 'console sign-in')
    return sessionResponse(account, session, sessionId, rateLimits)
  }

  app.post(
    '/session',
    {
      onRequest: refuseCrossSite,
      schema: {
        summary: 'Sign in to the console with an API key: sets the session cookie (HttpOnly, SameSite=Strict, 30 minutes idle, 8 hours at most)',
        tags,
        security: [],
        body: SignInWithKeyBody,
        response: { 200: ConsoleSessionResponse, ...errorResponses(400, 401, 403, 429) },
      },
    },
    async (request, reply) => {
      const signedIn = await signInThrottle.attempt(request, async () => {
        const authenticated = await app.accounts.authenticate(request.body.api_key)
        const account = authenticated ? await app.accounts.findAccount(authenticated.id) : null
        return authenticated && account ? { account, keyId: authenticated.keyId } : null
      })
      if (!signedIn) throw new UnauthorizedError('invalid or revoked API key')
      return signIn(request, reply, signedIn.account, signedIn.keyId)
    },
  )

  app.post(
    '/session/link',
    {
      onRequest: refuseCrossSite,
      schema: {
        summary: 'Sign in to the console with the token of a one-time sign-in link (`npm run -s admin -- console-link --account ID`)',
        description: 'A POST, so that a link prefetcher or scanner that fetches the link cannot use it up; the link\'s page asks before it sends this.',
        tags,
        security: [],
        body: SignInWithLinkBody,
        response: { 200: ConsoleSessionResponse, ...errorResponses(400, 401, 403, 429) },
      },
    },
    async (request, reply) => {
      const account = await signInThrottle.attempt(request, async () => {
        const accountId = await signInLinks.redeem(request.body.token, now())
        return accountId ? await app.accounts.findAccount(accountId) : null
      })
      if (!account) throw new UnauthorizedError('the sign-in link is unknown, used already or expired; ask for a new one')
      return signIn(request, reply, account, null)
    },
  )

  await app.register(signedInSessionRoutes, options)
}

/** The current session and sign-out, in a scope that requires a session. */
const signedInSessionRoutes: FastifyPluginAsyncTypebox<ConsoleRouteOptions> = async (signedIn, { consoleAuth, sessions, rateLimits }) => {
  signedIn.addHook('onRequest', requireConsoleSession(consoleAuth))

  signedIn.get(
    '/session',
    { schema: { summary: 'The signed-in account, its plan and rate limit, and the CSRF token', tags, security: sessionCookieSecurity, response: { 200: ConsoleSessionResponse, ...errorResponses(401, 403) } } },
    async (request) => {
      const { accountDoc, session, sessionId } = request.consoleCaller
      return sessionResponse(accountDoc, session, sessionId, rateLimits)
    },
  )

  signedIn.delete(
    '/session',
    { schema: { summary: 'Sign out: ends the session and clears its cookie', tags, security: sessionCookieSecurity, response: { 200: SignOutResponse, ...errorResponses(401, 403) } } },
    async (request, reply) => {
      await sessions.end(request.consoleCaller.sessionId)
      clearSessionCookie(request, reply)
      request.log.info({ account_id: request.consoleCaller.account.id }, 'console sign-out')
      return { signed_out: true as const }
    },
  )
}
