import { Type, type Static } from 'typebox'

/** How a destination's bucket is reached; the secrets are write-only. */
export const CredentialsInput = Type.Object(
  {
    access_key_id: Type.String({ minLength: 1, maxLength: 256 }),
    secret_access_key: Type.String({ minLength: 1, maxLength: 1024 }),
    session_token: Type.Optional(Type.String({ minLength: 1, maxLength: 4096 })),
  },
  { additionalProperties: false },
)

export const CreateStorageDestinationBody = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 100 }),
  endpoint_url: Type.String({ minLength: 1, maxLength: 2048 }),
  region: Type.String({ minLength: 1, maxLength: 64 }),
  bucket: Type.String({ minLength: 1, maxLength: 63 }),
  prefix: Type.Optional(Type.String({ maxLength: 1024 })),
  public_base_url: Type.Optional(Type.Union([Type.String({ minLength: 1, maxLength: 2048 }), Type.Null()])),
  path_style: Type.Optional(Type.Boolean({ default: false })),
  credentials: CredentialsInput,
})
export type CreateStorageDestinationBody = Static<typeof CreateStorageDestinationBody>

/**
 * PATCH takes the mutable fields. endpoint_url, region and bucket are listed
 * (as anything) only so the handler can reject them by name with 422 instead of
 * Ajv silently dropping them.
 */
export const UpdateStorageDestinationBody = Type.Object({
  name: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
  prefix: Type.Optional(Type.String({ maxLength: 1024 })),
  public_base_url: Type.Optional(Type.Union([Type.String({ minLength: 1, maxLength: 2048 }), Type.Null()])),
  path_style: Type.Optional(Type.Boolean()),
  credentials: Type.Optional(CredentialsInput),
  endpoint_url: Type.Optional(Type.Unknown()),
  region: Type.Optional(Type.Unknown()),
  bucket: Type.Optional(Type.Unknown()),
})
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
  public_base_url: Type.Union([Type.String(), Type.Null()]),
  path_style: Type.Boolean(),
  credentials: Type.Object({ access_key_id_masked: Type.String() }),
  is_active: Type.Boolean(),
  disabled_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  created_at: Type.String({ format: 'date-time' }),
  updated_at: Type.String({ format: 'date-time' }),
})
export type StorageDestinationResponse = Static<typeof StorageDestinationResponse>

export const StorageDestinationList = Type.Object({
  storage_destinations: Type.Array(StorageDestinationResponse),
  limit: Type.Integer(),
  offset: Type.Integer(),
})

/** The connection test's answer: 200 either way, with a safe reason when it failed. */
export const ConnectionTestResponse = Type.Union([
  Type.Object({ ok: Type.Literal(true) }),
  Type.Object({ ok: Type.Literal(false), error: Type.String() }),
])
export type ConnectionTestResponse = Static<typeof ConnectionTestResponse>

export { ErrorResponse } from '../errors/error-response.js'
