/**
 * The console's one way to reach the service: the typed client (client/),
 * same origin, authenticated by the HttpOnly session cookie the browser sends
 * by itself. Every request that changes state carries the session's CSRF
 * token; a 401 means the session ended, and the app returns to sign-in.
 */
import { ApiError, commandEvents, createFfkubeClient, expectData, type FfkubeClient } from '../../client/index.js'

export { ApiError, expectData }

let csrfToken: string | null = null
let onSessionEnded: () => void = () => undefined

/** The token GET /console/api/session returned, sent as X-CSRF-Token from now on. */
export function setCsrfToken(token: string | null): void {
  csrfToken = token
}

/** What to do when a request answers 401: the session expired or was ended elsewhere. */
export function whenSessionEnds(handler: () => void): void {
  onSessionEnded = handler
}

async function consoleFetch(request: Request): Promise<Response> {
  const headers = new Headers(request.headers)
  if (csrfToken && !['GET', 'HEAD'].includes(request.method)) headers.set('x-csrf-token', csrfToken)
  const response = await fetch(new Request(request, { headers, credentials: 'same-origin', cache: 'no-store' }))
  // The sign-in endpoints answer 401 for a wrong key or link: that is not a session ending.
  if (response.status === 401 && !new URL(request.url).pathname.startsWith('/console/api/session')) onSessionEnded()
  return response
}

/** The typed client over this origin. */
export const api: FfkubeClient = createFfkubeClient({ baseUrl: window.location.origin, fetch: consoleFetch })

/** A command's event stream (SSE) through the same session. */
export function watchCommand(commandId: string, signal: AbortSignal, lastEventId?: string) {
  return commandEvents(commandId, { baseUrl: window.location.origin, fetch: consoleFetch, signal, ...(lastEventId === undefined ? {} : { lastEventId }) })
}

/** The message to show for a failed call. */
export function messageOf(err: unknown): string {
  if (err instanceof ApiError) return `${err.message} (${err.code})`
  return err instanceof Error ? err.message : String(err)
}
