import { Type, type Static } from 'typebox'
import { MAX_COOKIES_TXT_CHARS } from './netscape-cookies.js'

export const PutYtdlpCookiesBody = Type.Object(
  {
    cookies: Type.String({
      minLength: 1,
      maxLength: MAX_COOKIES_TXT_CHARS,
      description: 'a Netscape cookies.txt (one cookie per line: domain, include-subdomains, path, secure, expires, name, value, tab-separated), as browser "cookies.txt" extensions and `yt-dlp --cookies` write it',
    }),
  },
  { additionalProperties: false },
)
export type PutYtdlpCookiesBody = Static<typeof PutYtdlpCookiesBody>

/** What the service shows of an account's cookies: never a name or value, only their count, their sites and dates. */
export const YtdlpCookiesResponse = Type.Object(
  {
    cookie_count: Type.Integer({ minimum: 1 }),
    domains: Type.Array(Type.String(), { description: 'the distinct cookie domains, lower case, without a leading dot' }),
    created_at: Type.String({ format: 'date-time' }),
    updated_at: Type.String({ format: 'date-time' }),
  },
  { title: 'YtdlpCookiesResponse' },
)
export type YtdlpCookiesResponse = Static<typeof YtdlpCookiesResponse>

export const DeleteYtdlpCookiesResponse = Type.Object({ deleted: Type.Literal(true) })
