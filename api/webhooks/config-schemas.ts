import { Type, type Static } from 'typebox'
import { HttpUrl, Nullable } from '../validation/field-schemas.js'

export const PutWebhookConfigBody = Type.Object(
  {
    url: Type.String({ ...HttpUrl('must be an absolute http(s) URL; a literal private or loopback IP address is refused unless the deployment allows private networks'), maxLength: 2048 }),
    secret: Type.Optional(Type.String({ minLength: 1, maxLength: 1024 })),
  },
  { additionalProperties: false },
)
export type PutWebhookConfigBody = Static<typeof PutWebhookConfigBody>

export const PutWebhookConfigResponse = Type.Object({ success: Type.Literal(true), url: Type.String() })

/** The stored configuration as GET shows it: never the secret, only whether there is one. */
export const WebhookConfigResponse = Type.Object({
  url: Type.String(),
  is_active: Type.Boolean(),
  disabled_at: Nullable(Type.String({ format: 'date-time' })),
  consecutive_failures: Type.Integer({ minimum: 0 }),
  has_secret: Type.Boolean(),
  created_at: Type.String({ format: 'date-time' }),
  updated_at: Type.String({ format: 'date-time' }),
})
export type WebhookConfigResponse = Static<typeof WebhookConfigResponse>

export const DeleteWebhookConfigResponse = Type.Object({ success: Type.Literal(true) })

export { ErrorResponse } from '../errors/error-response.js'
