import { pageOf } from '../pagination.js'
import { randomUUID } from 'node:crypto'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { Clock } from '../clock.js'
import { ConflictError, NotFoundError } from '../errors/api-errors.js'
import type { AttemptRecord } from './attempt-log.js'
import { ErrorResponse, RedeliverParams, RedeliverResponse, WebhookDeliveriesQuery, WebhookDeliveriesResponse, type WebhookAttempt } from './delivery-schemas.js'

const tags = ['webhook deliveries']

function toAttempt(record: AttemptRecord): WebhookAttempt {
  return {
    delivery_id: record.delivery_id,
    command_id: record.command_id,
    attempt: record.attempt,
    target: record.target,
    url: record.url,
    outcome: record.outcome,
    status_code: record.status_code,
    error: record.error,
    duration_ms: record.duration_ms,
    started_at: record.started_at.toISOString(),
    finished_at: record.finished_at.toISOString(),
  }
}

/** The delivery log and redelivery: GET /webhook-deliveries, POST /commands/:id/webhook/redeliver. */
export const webhookDeliveryRoutes: FastifyPluginAsyncTypebox<{ now: Clock; onRedeliveryQueued?: (() => void) | undefined }> = async (app, options) => {
  const { webhookAttempts: attempts, webhookDeliveries: deliveries } = app

  app.get(
    '/webhook-deliveries',
    { schema: { summary: 'The account\'s webhook delivery attempts, newest first', tags, querystring: WebhookDeliveriesQuery, response: { 200: WebhookDeliveriesResponse, 400: ErrorResponse } } },
    async (request) => {
      const { command_id } = request.query
      const { limit, offset } = pageOf(request.query)
      const records = await attempts.list(request.account.id, { limit, offset, commandId: command_id })
      return { deliveries: records.map(toAttempt), limit, offset }
    },
  )

  app.post(
    '/commands/:commandId/webhook/redeliver',
    {
      schema: {
        summary: 'Send a finished command\'s completion webhook again, as a new delivery with its own retries',
        tags,
        params: RedeliverParams,
        response: { 202: RedeliverResponse, 404: ErrorResponse, 409: ErrorResponse },
      },
    },
    async (request, reply) => {
      const command = await app.commands.find(request.account.id, request.params.commandId)
      if (!command) throw new NotFoundError('no such command')
      if (command.status !== 'SUCCESS' && command.status !== 'FAILED') {
        throw new ConflictError(`the command is ${command.status}; only a finished command has a completion webhook`)
      }
      if (!command.webhook_url) {
        const config = await app.webhookConfigs.find(request.account.id)
        if (!config?.is_active) throw new ConflictError('the command has no webhook_url and the account webhook is not configured or not active')
      }
      const deliveryId = `whd_${randomUUID()}`
      await deliveries.enqueue({ deliveryId, commandId: command._id, accountId: command.account_id }, options.now())
      options.onRedeliveryQueued?.()
      request.log.info({ command_id: command._id, account_id: command.account_id, delivery_id: deliveryId }, 'webhook redelivery queued')
      return reply.code(202).send({ delivery_id: deliveryId, command_id: command._id })
    },
  )
}
