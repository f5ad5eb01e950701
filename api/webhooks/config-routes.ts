import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { NotFoundError } from '../errors/api-errors.js'
import {
  DeleteWebhookConfigResponse,
  ErrorResponse,
  PutWebhookConfigBody,
  PutWebhookConfigResponse,
  WebhookConfigResponse,
} from './config-schemas.js'
import { validateWebhookUrl } from '../commands/validation.js'

const tags = ['webhook configuration']

/** PUT, GET and DELETE /webhook-config: the account-level webhook. */
export const webhookConfigRoutes: FastifyPluginAsyncTypebox<{ allowPrivateNetworks: boolean }> = async (app, { allowPrivateNetworks }) => {
  const configs = app.webhookConfigs

  app.put(
    '/webhook-config',
    {
      // The spec answers a missing or invalid url with 422.
      config: { validationErrorStatus: 422 },
      schema: { summary: 'Create or replace the account webhook; re-enables it and resets its failure count', tags, body: PutWebhookConfigBody, response: { 200: PutWebhookConfigResponse, 422: ErrorResponse } },
    },
    async (request) => {
      const url = validateWebhookUrl(request.body.url, allowPrivateNetworks)
      const saved = await configs.put(request.account.id, url, request.body.secret ?? null)
      request.log.info({ account_id: request.account.id }, 'webhook configured')
      return { success: true as const, url: saved.url }
    },
  )

  app.get(
    '/webhook-config',
    { schema: { summary: 'Get the account webhook configuration', tags, response: { 200: WebhookConfigResponse, 404: ErrorResponse } } },
    async (request) => {
      const doc = await configs.find(request.account.id)
      if (!doc) throw new NotFoundError('no webhook is configured')
      return {
        url: doc.url,
        is_active: doc.is_active,
        disabled_at: doc.disabled_at ? doc.disabled_at.toISOString() : null,
        consecutive_failures: doc.consecutive_failures,
        has_secret: doc.secret_sealed !== null,
        created_at: doc.created_at.toISOString(),
        updated_at: doc.updated_at.toISOString(),
      }
    },
  )

  app.delete(
    '/webhook-config',
    { schema: { summary: 'Deactivate the account webhook (its configuration is kept)', tags, response: { 200: DeleteWebhookConfigResponse, 404: ErrorResponse } } },
    async (request) => {
      const doc = await configs.deactivate(request.account.id)
      if (!doc) throw new NotFoundError('no webhook is configured')
      request.log.info({ account_id: request.account.id }, 'webhook deactivated')
      return { success: true as const }
    },
  )
}
