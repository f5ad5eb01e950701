import { Type, type Static } from 'typebox'

/**
 * The spec's list query: `limit` 1..100 (default 50) and `offset` >= 0
 * (default 0). Ajv applies the defaults, so handlers always see numbers.
 */
export const PageQuery = Type.Object({
  limit: Type.Integer({ minimum: 1, maximum: 100, default: 50, description: 'page size, 1 to 100' }),
  offset: Type.Integer({ minimum: 0, default: 0, description: 'items to skip' }),
})
export type PageQuery = Static<typeof PageQuery>
