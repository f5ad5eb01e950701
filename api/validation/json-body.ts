import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { InvalidRequestError } from '../errors/api-errors.js'

/** A UTF-16 surrogate not paired with its other half: with the `u` flag, a pair is one code point. */
const LONE_SURROGATE = /\p{Cs}/u

const wellFormed = (text: string) => !LONE_SURROGATE.test(text)

/** The first string (value or key) in `value` that is not well-formed Unicode, as a path; null when all are. */
function illFormedAt(value: unknown, path: string): string | null {
  if (typeof value === 'string') return wellFormed(value) ? null : path
  if (Array.isArray(value)) {
    for (const [index, item] of value.entries()) {
      const found = illFormedAt(item, `${path}[${index}]`)
      if (found) return found
    }
    return null
  }
  if (value !== null && typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) {
      if (!wellFormed(key)) return `${path} (a key)`
      const found = illFormedAt(item, `${path}.${key}`)
      if (found) return found
    }
  }
  return null
}

/**
 * Fastify's JSON parser, plus one rule: every string must be well-formed
 * Unicode. JSON lets a client escape a lone surrogate (`"\udd00"`), which is
 * no character at all: MongoDB cannot store it as UTF-8, and it would come
 * back in responses other clients then cannot decode.
 */
export const strictJsonBodies = fp(
  async (app: FastifyInstance) => {
    const parse = app.getDefaultJsonParser('error', 'error')
    app.removeContentTypeParser('application/json')
    app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
      // Fastify's parser answers through `done` at once (it is synchronous).
      void parse(request, body as string, (error, parsed) => {
        if (error) return done(error, undefined)
        const at = illFormedAt(parsed, 'body')
        if (at) return done(new InvalidRequestError(`${at}: must be well-formed Unicode (no lone surrogate escapes)`), undefined)
        done(null, parsed)
      })
    })
  },
  { name: 'strict-json-bodies' },
)
