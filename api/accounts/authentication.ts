import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { ConsoleAuth } from '../console/console-auth.js'
import { UnauthorizedError } from '../errors/api-errors.js'
import type { AuthenticatedAccount } from './account-repository.js'
import { API_KEY_PATTERN } from './api-keys.js'
import type { KeyCache } from './key-cache.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** Set for every request under /api/v1 before its handler runs. */
    account: AuthenticatedAccount
  }
}

/**
 * Authenticates every request of the scope it is registered in by its
 * `X-API-KEY` header or, when there is none, by the console's session cookie
 * (plus its CSRF token on a request that changes state: console-auth.ts).
 * Keys are looked up in the process's KeyCache: no store read for a key seen
 * in the last few seconds. Registered inside the /api/v1 scope only, so
 * health endpoints and docs stay open.
 */
export const authentication = fp(async (app: FastifyInstance, { keys, consoleAuth }: { keys: Pick<KeyCache, 'authenticate'>; consoleAuth?: ConsoleAuth | undefined }) => {
  app.decorateRequest('account', null as unknown as AuthenticatedAccount)
  app.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
    const presented = request.headers['x-api-key']
    if ((presented === undefined || presented === '') && consoleAuth?.hasCookie(request)) {
      const caller = await consoleAuth.authenticate(request)
      if (!caller) throw new UnauthorizedError('the console session has ended; sign in again')
      request.account = caller.account
      consoleAuth.renewCookie(request, reply, caller)
      return
    }
    if (typeof presented !== 'string' || presented === '') {
      throw new UnauthorizedError('missing X-API-KEY header')
    }
    if (!API_KEY_PATTERN.test(presented)) {
      throw new UnauthorizedError('invalid API key: expected ffsk_ followed by 64 lowercase hex characters')
    }
    const account = await keys.authenticate(presented)
    if (!account) throw new UnauthorizedError('invalid or revoked API key')
    request.account = account
  })
})
