import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { Clock } from '../clock.js'
import { ConflictError, NotFoundError } from '../errors/api-errors.js'
import { errorResponses } from '../errors/error-response.js'
import type { ConsoleAuth } from './console-auth.js'
import { ApiKeyListResponse, CreatedApiKeyResponse, KeyParams, RevealedApiKeyResponse, RevokedApiKeyResponse } from './schemas.js'
import { requireConsoleSession } from './session-routes.js'
import { maskApiKey } from './session-tokens.js'

const tags = ['console']
const security = [{ consoleSession: [] }]

/**
 * The account's API keys, managed in the console only (the spec: "created,
 * copied and individually revoked in the web dashboard"): list masked,
 * create, copy (the sealed key opened on each request), revoke.
 */
export const consoleKeyRoutes: FastifyPluginAsyncTypebox<{ consoleAuth: ConsoleAuth; now: Clock }> = async (app, { consoleAuth, now }) => {
  app.addHook('onRequest', requireConsoleSession(consoleAuth))

  app.get(
    '/keys',
    { schema: { summary: "The account's API keys, masked, newest first; revoked ones too", tags, security, response: { 200: ApiKeyListResponse, ...errorResponses(401, 403) } } },
    async (request) => {
      const keys = await app.accounts.listKeys(request.consoleCaller.account.id)
      return {
        keys: keys.map((key) => ({
          key_id: key.key_id,
          masked: maskApiKey(key.last_four),
          created_at: key.created_at.toISOString(),
          revoked_at: key.revoked_at?.toISOString() ?? null,
        })),
      }
    },
  )

  app.post(
    '/keys',
    { schema: { summary: 'Create an API key: it works at once', tags, security, response: { 201: CreatedApiKeyResponse, ...errorResponses(401, 403) } } },
    async (request, reply) => {
      const accountId = request.consoleCaller.account.id
      const created = await app.accounts.createKey(accountId)
      request.log.info({ account_id: accountId, key_id: created.key_id }, 'API key created in the console')
      return reply.code(201).send({ key_id: created.key_id, api_key: created.api_key, masked: maskApiKey(created.api_key), created_at: created.created_at.toISOString() })
    },
  )

  app.post(
    '/keys/:keyId/reveal',
    {
      schema: {
        summary: 'The key in clear, to copy: opened from its sealed copy on each call (a POST, so it is never cached or prefetched)',
        tags,
        security,
        params: KeyParams,
        response: { 200: RevealedApiKeyResponse, ...errorResponses(400, 401, 403, 404, 409) },
      },
    },
    async (request) => {
      const accountId = request.consoleCaller.account.id
      const { keyId } = request.params
      const revealed = await app.accounts.revealAccountKey(accountId, keyId)
      if (revealed === null) throw new NotFoundError(`keyId: no API key ${keyId}`)
      if (revealed === 'revoked') throw new ConflictError(`keyId: API key ${keyId} is revoked; a revoked key cannot be copied`)
      request.log.info({ account_id: accountId, key_id: keyId }, 'API key copied in the console')
      return { key_id: keyId, api_key: revealed }
    },
  )

  app.delete(
    '/keys/:keyId',
    {
      schema: {
        summary: 'Revoke an API key: its next request gets 401, and a console session opened with it ends',
        tags,
        security,
        params: KeyParams,
        response: { 200: RevokedApiKeyResponse, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request) => {
      const accountId = request.consoleCaller.account.id
      const { keyId } = request.params
      const revokedAt = await app.accounts.revokeAccountKey(accountId, keyId, now())
      if (!revokedAt) throw new NotFoundError(`keyId: no API key ${keyId}`)
      request.log.info({ account_id: accountId, key_id: keyId }, 'API key revoked in the console')
      return { key_id: keyId, revoked: true as const, revoked_at: revokedAt.toISOString() }
    },
  )
}
