import { Type, type Static } from 'typebox'
import { PLANS } from '../accounts/plans.js'
import { Nullable } from '../validation/field-schemas.js'

export { ErrorResponse } from '../errors/error-response.js'

const DateTime = Type.String({ format: 'date-time' })

/** The key format the spec fixes; sent in a body, never in a URL. */
export const SignInWithKeyBody = Type.Object(
  { api_key: Type.String({ pattern: '^ffsk_[0-9a-f]{64}$', description: 'one of the account\'s API keys: ffsk_ followed by 64 lowercase hex characters' }) },
  { additionalProperties: false },
)
export type SignInWithKeyBody = Static<typeof SignInWithKeyBody>

export const SignInWithLinkBody = Type.Object(
  { token: Type.String({ pattern: '^[A-Za-z0-9_-]{43}$', description: 'the token of a sign-in link from `npm run -s admin -- console-link`' }) },
  { additionalProperties: false },
)
export type SignInWithLinkBody = Static<typeof SignInWithLinkBody>

/** The signed-in account as the console shows it, and the token its state-changing requests carry. */
export const ConsoleSessionResponse = Type.Object(
  {
    account_id: Type.String(),
    account_name: Nullable(Type.String()),
    plan: Type.Enum([...PLANS]),
    features: Type.Object({ video_downloads: Type.Boolean(), business_features: Type.Boolean() }),
    rate_limit_per_minute: Type.Integer({ minimum: 0, description: 'requests per minute per API key on this plan; 0 = unlimited' }),
    signed_in_with: Type.Union([Type.Literal('api_key'), Type.Literal('sign_in_link')]),
    key_id: Nullable(Type.String({ description: 'the key the session was opened with: revoking it ends the session' })),
    csrf_token: Type.String({ description: 'send it as X-CSRF-Token on every POST, PUT, PATCH and DELETE made with the session cookie' }),
    expires_at: DateTime,
  },
  { title: 'ConsoleSession' },
)
export type ConsoleSessionResponse = Static<typeof ConsoleSessionResponse>

export const SignOutResponse = Type.Object({ signed_out: Type.Literal(true) })

export const ApiKeySummary = Type.Object(
  {
    key_id: Type.String(),
    masked: Type.String({ description: 'ffsk_… and the last four characters' }),
    created_at: DateTime,
    revoked_at: Nullable(DateTime),
  },
  { title: 'ApiKeySummary' },
)
export type ApiKeySummary = Static<typeof ApiKeySummary>

export const ApiKeyListResponse = Type.Object({ keys: Type.Array(ApiKeySummary) })

export const CreatedApiKeyResponse = Type.Object({ key_id: Type.String(), api_key: Type.String(), masked: Type.String(), created_at: DateTime })

export const RevealedApiKeyResponse = Type.Object({ key_id: Type.String(), api_key: Type.String() })

export const RevokedApiKeyResponse = Type.Object({ key_id: Type.String(), revoked: Type.Literal(true), revoked_at: DateTime })

export const KeyParams = Type.Object({ keyId: Type.String({ pattern: '^key_[0-9a-f]{32}$' }) })

