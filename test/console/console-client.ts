import type { FastifyInstance, LightMyRequestResponse } from 'fastify'

/** The session cookie's name=value from a sign-in answer, for the Cookie header of the next requests. */
export function cookieFrom(response: LightMyRequestResponse): string {
  const header = response.headers['set-cookie']
  const first = Array.isArray(header) ? header[0] : header
  if (!first) throw new Error(`no Set-Cookie in the answer (${response.statusCode}: ${response.body})`)
  return first.split(';')[0]!
}

/** A browser's console session, spoken through app.inject(): same-origin headers, the cookie, and the CSRF token on changes. */
export class ConsoleSession {
  constructor(
    private readonly app: FastifyInstance,
    readonly cookie: string,
    readonly csrfToken: string,
  ) {}

  static async signIn(app: FastifyInstance, apiKey: string): Promise<ConsoleSession> {
    const response = await app.inject({ method: 'POST', url: '/console/api/session', headers: { origin: 'http://localhost:80' }, payload: { api_key: apiKey } })
    if (response.statusCode !== 200) throw new Error(`sign-in answered ${response.statusCode}: ${response.body}`)
    return new ConsoleSession(app, cookieFrom(response), response.json<{ csrf_token: string }>().csrf_token)
  }

  /** A request as the console page makes it; `csrf: false` leaves the token out. */
  request(method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', url: string, options: { payload?: object; csrf?: boolean; headers?: Record<string, string> } = {}) {
    const token: Record<string, string> = options.csrf !== false && method !== 'GET' ? { 'x-csrf-token': this.csrfToken } : {}
    const headers: Record<string, string> = { cookie: this.cookie, 'sec-fetch-site': 'same-origin', ...token, ...options.headers }
    return this.app.inject({ method, url, headers, ...(options.payload ? { payload: options.payload } : {}) })
  }
}
