import type { FastifyInstance, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { InvalidRequestError } from './api-errors.js'

/**
 * Refuses a query or path value that Ajv coerced into a non-finite number.
 * Ajv's string-to-number coercion turns `1e309` and `Infinity` into Infinity
 * and then skips `maximum` (its numeric keywords only judge finite numbers),
 * so `?limit=1e309` passes validation and reaches the database, which fails.
 * Runs after validation (preHandler), for every route of the scope.
 */
export const finiteNumbers = fp(async (app: FastifyInstance) => {
  app.addHook('preHandler', async (request: FastifyRequest) => {
    for (const [part, values] of [['querystring', request.query], ['params', request.params]] as const) {
      if (typeof values !== 'object' || values === null) continue
      for (const [name, value] of Object.entries(values)) {
        if (typeof value === 'number' && !Number.isFinite(value)) throw new InvalidRequestError(`${part}.${name} must be a finite number`)
      }
    }
  })
})
