import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { statusForFailure } from '../validation/error-status.js'
import { describeFailure } from '../validation/failure-message.js'
import { ApiError, InvalidRequestError, NotFoundError, RateLimitedError, ValidationError } from './api-errors.js'

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * Which spec code a schema-validation failure on this route answers with.
     * The spec assigns 400 INVALID_REQUEST to some endpoints and 422
     * VALIDATION_ERROR to others; 400 when unset.
     */
    validationErrorStatus?: 400 | 422
  }
}

/**
 * The one place errors become HTTP responses: every body is the spec's
 * `{error, message}`; 401 also carries `detail`, as the spec's authentication
 * page shows; a 5xx says nothing of its cause to the client and logs it instead.
 */
export const errorHandler = fp(async (app: FastifyInstance) => {
  app.setErrorHandler((error: FastifyError, request, reply) => {
    if (error instanceof ApiError) {
      if (error instanceof RateLimitedError) void reply.header('retry-after', String(error.retryAfterSeconds))
      const body: Record<string, string> = { error: error.code, message: error.message }
      if (error.statusCode === 401) body.detail = error.message
      return reply.code(error.statusCode).send(body)
    }
    if (error.validation) {
      const fallback = request.routeOptions.config.validationErrorStatus ?? 400
      const schema = (request.routeOptions.schema as Record<string, unknown> | undefined)?.[error.validationContext ?? 'body']
      const status = statusForFailure(schema, error.validation[0]?.schemaPath ?? '', fallback)
      const Mapped = status === 422 ? ValidationError : InvalidRequestError
      const mapped = new Mapped(describeFailure(error.validation, error.validationContext ?? 'request', schema))
      return reply.code(mapped.statusCode).send({ error: mapped.code, message: mapped.message })
    }
    const status = error.statusCode ?? 500
    if (status >= 400 && status < 500) {
      // Fastify's own 4xx: unparsable JSON, wrong content type, body too large.
      const message = error.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE' ? 'unsupported Content-Type' : error.message
      return reply.code(status === 415 || status === 413 ? status : 400).send({ error: 'INVALID_REQUEST', message })
    }
    request.log.error({ err: error }, 'request failed')
    return reply.code(500).send({ error: 'INTERNAL_ERROR', message: 'internal error; the failure was logged' })
  })

  app.setNotFoundHandler(routeNotFound)
})

/** 404 NOT_FOUND for a path no route serves; scopes with their own hooks (auth) register it again. */
export function routeNotFound(request: FastifyRequest, reply: FastifyReply) {
  const error = new NotFoundError(`no route ${request.method} ${request.url.split('?')[0]}`)
  return reply.code(404).send({ error: error.code, message: error.message })
}
