import type { RouteOptions } from 'fastify'
import { ErrorResponse } from '../errors/error-response.js'

/**
 * Statuses any /api/v1 route can answer with, whatever its own list says:
 * 401 and 429 on every endpoint (the spec's conventions); on a route with a
 * body, 400 for unparsable JSON, 413 for a body over the limit and 415 for
 * another content type (Fastify answers those before the handler runs). An
 * onRoute hook adds them to each route's response schemas, so the OpenAPI
 * document states every status a client can meet.
 */
export function addCommonErrorResponses(route: RouteOptions): void {
  if (!route.schema || route.schema.hide) return
  const statuses = [401, 429]
  if (route.schema.body || route.schema.consumes) statuses.push(400, 413, 415)
  const response = { ...(route.schema.response as Record<string, unknown> | undefined) }
  for (const status of statuses) response[status] ??= ErrorResponse
  route.schema.response = response
}
