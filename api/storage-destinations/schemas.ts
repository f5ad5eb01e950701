import { Type, type Static } from 'typebox'
import { PageOf } from '../pagination.js'
import { HOST_NAME, HTTP_ORIGIN, Nullable, PORT } from '../validation/field-schemas.js'

/** How a destination's bucket is reached; the secrets are write-only. */
export const CredentialsInput = Type.Object(
  {
    access_key_id: Type.String({ minLength: 1, maxLength: 256 }),
    secret_access_key: Type.String({ minLength: 1, maxLength: 1024 }),
    session_token: Type.Optional(Type.String({ minLength: 1, maxLength: 4096 })),
  },
  { additionalProperties: false },
)

/**
 * The destination rules of destination-rules.ts, as far as a pattern can state
 * them (that file keeps the rest: a bucket shaped like an IP address or using
 * a prefix S3 reserves, a local host name where private networks are not
 * allowed).
 */
const Name = Type.String({ minLength: 1, maxLength: 100, pattern: '\\S', description: 'must not be blank' })
export const ENDPOINT_URL_PATTERN = `^https?://${HOST_NAME}${PORT}/?$`
const EndpointUrl = Type.String({
  minLength: 1,
  maxLength: 2048,
  pattern: ENDPOINT_URL_PATTERN,
  description: 'must be an https:// origin on a host name (no raw IP address, path, query or fragment; http:// only where the deployment allows private networks)',
})
export const REGION_PATTERN = '^[A-Za-z0-9_-]{1,64}$'
const Region = Type.String({ pattern: REGION_PATTERN, description: 'must be 1 to 64 letters, digits, hyphens or underscores' })
const BUCKET_LABEL = '[a-z0-9](?:[a-z0-9-]*[a-z0-9])?'
export const BUCKET_PATTERN = `^${BUCKET_LABEL}(?:\\.${BUCKET_LABEL})*$`
const Bucket = Type.String({
  minLength: 3,
  maxLength: 63,
  pattern: BUCKET_PATTERN,
  description: 'must be 3 to 63 lowercase letters, digits, dots or hyphens, in dot-separated labels starting and ending with a letter or digit',
})
const PREFIX_CHAR = '[^/\\\\\\x00-\\x1f\\x7f]'
/** A segment other than "." and "..", without control characters or backslashes. */
const PREFIX_SEGMENT = `(?:[^./\\\\\\x00-\\x1f\\x7f]${PREFIX_CHAR}*|\\.[^./\\\\\\x00-\\x1f\\x7f]${PREFIX_CHAR}*|\\.\\.${PREFIX_CHAR}+)`
export const PREFIX_PATTERN = `^/*(?:${PREFIX_SEGMENT}(?:/${PREFIX_SEGMENT})*)?/*$`
const Prefix = Type.String({
  maxLength: 512,
  pattern: PREFIX_PATTERN,
  description: 'must be "/"-separated segments, none empty, "." or "..", without control characters or backslashes (leading and trailing slashes are removed)',
})
export const PUBLIC_BASE_URL_PATTERN = `${HTTP_ORIGIN}(?:/[^?#\\x00-\\x20\\x7f]*)?$`
const PublicBaseUrl = Type.Union([
  Type.String({ minLength: 1, maxLength: 2048, pattern: PUBLIC_BASE_URL_PATTERN, description: 'must be an http(s) URL without query or fragment' }),
  Type.Null(),
])

export const CreateStorageDestinationBody = Type.Object(
  {
    name: Name,
    endpoint_url: EndpointUrl,
    region: Region,
    bucket: Bucket,
    prefix: Type.Optional(Prefix),
    public_base_url: Type.Optional(PublicBaseUrl),
    path_style: Type.Optional(Type.Boolean({ default: false })),
    credentials: CredentialsInput,
  },
  { additionalProperties: false },
)
export type CreateStorageDestinationBody = Static<typeof CreateStorageDestinationBody>

const Immutable = Type.Never({ description: 'cannot be changed; create a new storage destination instead' })
const MUTABLE_FIELDS = ['name', 'prefix', 'public_base_url', 'path_style', 'credentials'] as const

/**
 * PATCH takes the mutable fields, at least one. endpoint_url, region and
 * bucket are listed as never valid so the refusal names them and says why.
 * "At least one property" is "at least one mutable field" here (every other
 * property is refused), and unlike an `anyOf` of `required` lists it lets a
 * body of only `bucket` fail on `bucket` itself.
 */
export const UpdateStorageDestinationBody = Type.Object(
  {
    name: Type.Optional(Name),
    prefix: Type.Optional(Prefix),
    public_base_url: Type.Optional(PublicBaseUrl),
    path_style: Type.Optional(Type.Boolean()),
    credentials: Type.Optional(CredentialsInput),
    endpoint_url: Type.Optional(Immutable),
    region: Type.Optional(Immutable),
    bucket: Type.Optional(Immutable),
  },
  {
    additionalProperties: false,
    minProperties: 1,
    description: `must have at least one of ${MUTABLE_FIELDS.join(', ')}`,
  },
)
export type UpdateStorageDestinationBody = Static<typeof UpdateStorageDestinationBody>

export const StorageDestinationParams = Type.Object({
  storageDestinationId: Type.String(),
})
export type StorageDestinationParams = Static<typeof StorageDestinationParams>

/** A destination as every response shows it: never a secret, only the masked access key id. */
export const StorageDestinationResponse = Type.Object({
  storage_destination_id: Type.String({ pattern: '^sd_[0-9a-f]{32}$' }),
  name: Type.String(),
  endpoint_url: Type.String(),
  region: Type.String(),
  bucket: Type.String(),
  prefix: Type.String(),
  public_base_url: Nullable(Type.String()),
  path_style: Type.Boolean(),
  credentials: Type.Object({ access_key_id_masked: Type.String() }),
  is_active: Type.Boolean(),
  disabled_at: Nullable(Type.String({ format: 'date-time' })),
  created_at: Type.String({ format: 'date-time' }),
  updated_at: Type.String({ format: 'date-time' }),
})
export type StorageDestinationResponse = Static<typeof StorageDestinationResponse>

export const StorageDestinationList = PageOf('storage_destinations', StorageDestinationResponse)

/** The connection test's answer: 200 either way, with a safe reason when it failed. */
export const ConnectionTestResponse = Type.Union([
  Type.Object({ ok: Type.Literal(true) }),
  Type.Object({ ok: Type.Literal(false), error: Type.String() }),
])
export type ConnectionTestResponse = Static<typeof ConnectionTestResponse>

export { ErrorResponse } from '../errors/error-response.js'
