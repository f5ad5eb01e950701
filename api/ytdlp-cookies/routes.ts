import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import { planFeatures } from '../accounts/plans.js'
import { ForbiddenError, InvalidRequestError, NotFoundError } from '../errors/api-errors.js'
import { errorResponses } from '../errors/error-response.js'
import { CookieFileError, parseNetscapeCookies } from './netscape-cookies.js'
import { DeleteYtdlpCookiesResponse, PutYtdlpCookiesBody, YtdlpCookiesResponse } from './schemas.js'
import type { YtdlpCookiesMetadata } from './ytdlp-cookie-repository.js'

const tags = ['account']

/** Cookies serve only yt-dlp, so a plan without video downloads has no use for them (checked before the body). */
async function requireVideoDownloads(request: FastifyRequest): Promise<void> {
  if (!planFeatures(request.account.plan).videoDownloads) {
    throw new ForbiddenError('yt-dlp cookies serve video downloads, which are not available on the free plan; they need a trial, Growth or Business plan')
  }
}

function shown(doc: YtdlpCookiesMetadata): YtdlpCookiesResponse {
  return { cookie_count: doc.cookie_count, domains: doc.domains, created_at: doc.created_at.toISOString(), updated_at: doc.updated_at.toISOString() }
}

/**
 * PUT, GET and DELETE /ytdlp-cookies: the account's cookies for its yt-dlp
 * commands. Stored sealed; no answer and no log line ever holds a cookie.
 */
export const ytdlpCookieRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const cookies = app.ytdlpCookies

  app.put(
    '/ytdlp-cookies',
    {
      preValidation: requireVideoDownloads,
      schema: {
        summary: "Upload or replace the account's cookies.txt for its yt-dlp commands",
        description: 'Used by every later yt-dlp command of this account, and by no other account. Stored encrypted; never returned.',
        tags,
        body: PutYtdlpCookiesBody,
        response: { 200: YtdlpCookiesResponse, ...errorResponses(400, 403) },
      },
    },
    async (request) => {
      let jar
      try {
        jar = parseNetscapeCookies(request.body.cookies)
      } catch (error) {
        if (error instanceof CookieFileError) throw new InvalidRequestError(`body.cookies ${error.message}`)
        throw error
      }
      const saved = await cookies.put(request.account.id, jar)
      request.log.info({ account_id: request.account.id, cookie_count: jar.cookieCount }, 'yt-dlp cookies stored')
      return shown(saved)
    },
  )

  app.get(
    '/ytdlp-cookies',
    { preValidation: requireVideoDownloads, schema: { summary: "What the account's yt-dlp cookies cover (never the cookies)", tags, response: { 200: YtdlpCookiesResponse, ...errorResponses(403, 404) } } },
    async (request) => {
      const doc = await cookies.metadata(request.account.id)
      if (!doc) throw new NotFoundError('no yt-dlp cookies are stored for this account')
      return shown(doc)
    },
  )

  app.delete(
    '/ytdlp-cookies',
    {
      // No plan check: an account moved to the free plan can still remove what it stored.
      schema: { summary: "Delete the account's yt-dlp cookies", tags, response: { 200: DeleteYtdlpCookiesResponse, ...errorResponses(404) } },
    },
    async (request) => {
      if (!(await cookies.delete(request.account.id))) throw new NotFoundError('no yt-dlp cookies are stored for this account')
      request.log.info({ account_id: request.account.id }, 'yt-dlp cookies deleted')
      return { deleted: true as const }
    },
  )
}
