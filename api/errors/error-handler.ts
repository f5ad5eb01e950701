import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { schemaAtFailure, statusForFailure } from '../validation/error-status.js'
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
 * Turns Ajv's first error into "field: reason", e.g. "body.input_files must be
 * object". A key refused by a map's `propertyNames` names the pattern it missed.
 */
function describeValidation(error: FastifyError, schema: unknown): string {
  const first = error.validation?.[0]
  if (!first) return error.message
  const context = error.validationContext ?? 'request'
  // commands/1/output_files → commands[1].output_files, as the code's own checks name fields.
  const path = first.instancePath.replace(/^\//, '').replace(/\/(\d+)(?=\/|$)/g, '[$1]').replaceAll('/', '.')
  const missing = (first.params as { missingProperty?: string }).missingProperty
  const additional = (first.params as { additionalProperty?: string }).additionalProperty
  const key = (first as { propertyName?: string }).propertyName
  if (key !== undefined) {
    const rule = schemaAtFailure(schema, first.schemaPath)
    return `${[context, path].filter(Boolean).join('.')}: key "${key}" ${(rule?.description as string | undefined) ?? `must match ${String(rule?.pattern)}`}`
  }
  const field = [context, path, missing ?? additional].filter(Boolean).join('.')
  if (missing) return `${field} is required`
  if (additional) return `${field} is not a known field`
  const limit = (first.params as { limit?: number }).limit
  if (first.keyword === 'maxProperties') return `${field}: at most ${limit} keys are allowed`
  if (first.keyword === 'maxItems') return `${field}: at most ${limit} items are allowed`
  // A pattern's schema says in words what it wants ("must be an absolute http(s) URL ...").
  const description = first.keyword === 'pattern' ? (schemaAtFailure(schema, first.schemaPath)?.description as string | undefined) : undefined
  if (description?.startsWith('must ')) return `${field}: ${description}`
  return `${field} ${first.message ?? 'is invalid'}`
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
      const mapped = new Mapped(describeValidation(error, schema))
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
