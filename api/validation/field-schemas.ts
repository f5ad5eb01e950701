import { Type } from 'typebox'
import { INPUT_ALIAS_PATTERN, OUTPUT_ALIAS_PATTERN } from '../../contracts/placeholders.js'
import { answersWith } from './error-status.js'

/** The schema, or null. */
export const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) => Type.Union([schema, Type.Null()])

/**
 * The field rules every body shares, as JSON Schema: Ajv enforces them and the
 * OpenAPI document states them, so a client generated from it sends only what
 * the server takes. Each mirrors a check in code (api/commands/validation.ts,
 * contracts/placeholders.ts) that stays for inputs not from HTTP (presets,
 * stored documents).
 */

const OCTET = '(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])'
const LABEL = '[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?'
/**
 * A DNS name whose last label starts with a letter, so it is never read as an
 * IPv4 address; a trailing dot (the root) is allowed, as the URL parser allows
 * it, and the rules that judge the host (loopback, private) see it.
 */
export const HOST_NAME = `(?:${LABEL}\\.)*[A-Za-z](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\\.?`
const IPV4 = `${OCTET}(?:\\.${OCTET}){3}`
/** Dotted IPv4, with the trailing dot the URL parser also takes. */
const IPV4_HOST = `${IPV4}\\.?`
const H16 = '[0-9A-Fa-f]{1,4}'
/** The RFC 4291 text forms (and IPv4-mapped/compatible ones), all of which the WHATWG parser accepts. */
const IPV6 = [
  `(?:${H16}:){7}${H16}`,
  `(?:${H16}:){1,7}:`,
  `(?:${H16}:){1,6}:${H16}`,
  `(?:${H16}:){1,5}(?::${H16}){1,2}`,
  `(?:${H16}:){1,4}(?::${H16}){1,3}`,
  `(?:${H16}:){1,3}(?::${H16}){1,4}`,
  `(?:${H16}:){1,2}(?::${H16}){1,5}`,
  `${H16}:(?::${H16}){1,6}`,
  `:(?:(?::${H16}){1,7}|:)`,
  `::(?:[Ff]{4}(?::0{1,4})?:)?${IPV4}`,
].join('|')
/** A host name, a dotted IPv4 address or a bracketed IPv6 address. */
const HOST = `(?:${HOST_NAME}|${IPV4_HOST}|\\[(?:${IPV6})\\])`
export const PORT = '(?::(?:6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[1-9][0-9]{0,3}|0))?'
/**
 * An absolute http(s) URL without credentials: a subset of what the WHATWG URL
 * parser accepts, so every URL the schema allows is one the server can parse.
 */
/** The scheme, host and port of an http(s) URL, anchored at the start only. */
export const HTTP_ORIGIN = `^https?://${HOST}${PORT}`
export const HTTP_URL_PATTERN = `${HTTP_ORIGIN}(?:[/?#][^\\x00-\\x20\\x7f]*)?$`
export const MAX_URL_LENGTH = 4096

/** An http(s) URL field; a malformed one is 422 on every endpoint (a non-string keeps the endpoint's status). */
export const HttpUrl = (description = 'must be an absolute http(s) URL without credentials') =>
  Type.String({ minLength: 1, maxLength: MAX_URL_LENGTH, pattern: HTTP_URL_PATTERN, description, ...answersWith(422) })

/**
 * A plain output filename: no path separators, no "..", no leading dot or
 * dash, no control characters or placeholder brackets, at most 255 bytes
 * (checked in code: JSON Schema counts characters).
 */
const FILENAME_CHAR = '[^./\\\\{}<>\\x00-\\x1f\\x7f]'
/** Every dot is followed by another allowed character, except one at the end: so never "..". */
export const FILENAME_PATTERN = `^[^./\\\\{}<>\\x00-\\x1f\\x7f-](?:${FILENAME_CHAR}|\\.${FILENAME_CHAR})*\\.?$`
export const Filename = Type.String({
  minLength: 1,
  maxLength: 255,
  pattern: FILENAME_PATTERN,
  description: 'must be a plain filename: no path separators, no "..", no leading dot or dash, no control characters or placeholder brackets',
})

/** Entries per alias map: a bound that keeps one record well inside MongoDB's 16 MiB document. */
export const MAX_FILES_PER_MAP = 50

/**
 * Keys are constrained with `propertyNames`, not TypeBox's pattern-keyed
 * Record: @fastify/swagger rewrites `patternProperties` into
 * `additionalProperties`, which would drop the key rule from the document.
 */
const keyedBy = (pattern: string, description: string) => ({ propertyNames: { pattern, description } })

/** `in_*` alias → URL. A key off the pattern is the endpoint's "invalid alias" status. */
export const InputUrlMap = Type.Record(Type.String(), HttpUrl(), {
  ...keyedBy(INPUT_ALIAS_PATTERN, 'must start with "in_" followed by 1 to 61 letters, digits or underscores'),
  minProperties: 1,
  maxProperties: MAX_FILES_PER_MAP,
  description: 'map of in_* alias to http(s) URL',
})

/** `out_*` alias → plain filename. */
export const OutputFileMap = Type.Record(Type.String(), Filename, {
  ...keyedBy(OUTPUT_ALIAS_PATTERN, 'must start with "out_" followed by 1 to 60 letters, digits or underscores'),
  maxProperties: MAX_FILES_PER_MAP,
  description: 'map of out_* alias to a plain filename',
})

export const MAX_METADATA_KEYS = 10
export const MAX_METADATA_KEY_LENGTH = 256
export const MAX_METADATA_STRING_LENGTH = 1024

/** Metadata as submitted: at most 10 keys of string, number or boolean; 422 on every endpoint (the spec's "excess metadata"). */
export const SubmittedMetadata = Type.Union(
  [
    Type.Record(Type.String(), Type.Union([Type.String({ maxLength: MAX_METADATA_STRING_LENGTH }), Type.Number(), Type.Boolean()]), {
      ...keyedBy(
        `^[^$.\\x00-\\x1f\\x7f][^.\\x00-\\x1f\\x7f]{0,${MAX_METADATA_KEY_LENGTH - 1}}$`,
        `must be 1 to ${MAX_METADATA_KEY_LENGTH} characters, not start with "$", and contain no "." or control character`,
      ),
      maxProperties: MAX_METADATA_KEYS,
    }),
    Type.Null(),
  ],
  {
    description: `map of string to string, number or boolean; at most ${MAX_METADATA_KEYS} keys of 1 to ${MAX_METADATA_KEY_LENGTH} characters, not starting with "$", without "." or control characters`,
    ...answersWith(422),
  },
)
