import type { FastifyInstance, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { UnauthorizedError } from '../errors/api-errors.js'
import type { AccountRepository, AuthenticatedAccount } from './account-repository.js'
import { API_KEY_PATTERN } from './api-keys.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** Set for every request under /api/v1 before its handler runs. */
    account: AuthenticatedAccount
  }
}

/**
 * Authenticates every request of the scope it is registered in by its
 * `X-API-KEY` header. Registered inside the /api/v1 scope only, so health
 * endpoints and docs stay open.
 */
export const authentication = fp(async (app: FastifyInstance, { accounts }: { accounts: AccountRepository }) => {
  app.decorateRequest('account', null as unknown as AuthenticatedAccount)
  app.addHook('onRequest', async (request: FastifyRequest) => {
    const presented = request.headers['x-api-key']
    if (typeof presented !== 'string' || presented === '') {
      throw new UnauthorizedError('missing X-API-KEY header')
    }
    if (!API_KEY_PATTERN.test(presented)) {
      throw new UnauthorizedError('invalid API key: expected ffsk_ followed by 64 lowercase hex characters')
    }
    const account = await accounts.authenticate(presented)
    if (!account) throw new UnauthorizedError('invalid or revoked API key')
    request.account = account
  })
})
