import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify'
import { MethodNotAllowedError, NotFoundError } from './api-errors.js'
import { routeNotFound } from './error-handler.js'

/**
 * A scope (`/api/v1`, `/console/api`) answers requests no route of it matches
 * alike: 405 with Allow for a known path, 404 otherwise, both before the body
 * is read. Call it before the scope's routes are added; hooks added earlier in
 * the scope (authentication) run first.
 */
export function answerUnmatchedRequests(scope: FastifyInstance): void {
  const table = new RouteTable()
  scope.addHook('onRoute', table.record)
  scope.addHook('onRequest', table.refuseOtherMethods)
  scope.setNotFoundHandler(routeNotFound)
}

/**
 * Which methods each route path serves, so a request that matches no route
 * can be told apart: an unknown path is 404, a known path with another method
 * is 405 with `Allow` (RFC 9110). Fastify's router answers both with 404.
 */
export class RouteTable {
  private readonly routes: { pattern: RegExp; staticSegments: number; methods: Set<string> }[] = []

  /** An onRoute hook: records the route's path and methods. */
  readonly record = (route: RouteOptions): void => {
    const methods = Array.isArray(route.method) ? route.method : [route.method]
    const segments = route.url.split('/')
    const source = `^${segments.map((segment) => (segment.startsWith(':') ? '[^/]+' : escape(segment))).join('/')}/?$`
    let entry = this.routes.find((r) => r.pattern.source === source)
    if (!entry) {
      entry = { pattern: new RegExp(source), staticSegments: segments.filter((s) => !s.startsWith(':')).length, methods: new Set() }
      this.routes.push(entry)
    }
    for (const method of methods) entry.methods.add(method)
  }

  /**
   * The methods of the most specific routes matching `path`, sorted; empty when
   * none does. Most specific as the router ranks them: `/files/store-file`
   * is the store-file route, not `/files/:fileId`.
   */
  allowed(path: string): string[] {
    const matching = this.routes.filter((route) => route.pattern.test(path))
    const best = Math.max(...matching.map((route) => route.staticSegments))
    const methods = new Set(matching.filter((route) => route.staticSegments === best).flatMap((route) => [...route.methods]))
    return [...methods].sort()
  }

  /**
   * An onRequest hook for the not-found route: 405 with Allow when the path
   * is known, else 404. onRequest, before the body is read: a request no
   * route takes must not be judged by its content type (QUERY without one
   * would be Fastify's 400).
   */
  readonly refuseOtherMethods = async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    if (!request.is404) return
    const path = request.url.split('?')[0] ?? ''
    const allow = this.allowed(path)
    if (allow.length === 0) throw new NotFoundError(`no route ${request.method} ${path}`)
    void reply.header('allow', allow.join(', '))
    throw new MethodNotAllowedError(`${request.method} is not allowed on ${path}; allowed: ${allow.join(', ')}`, allow)
  }
}

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
}
