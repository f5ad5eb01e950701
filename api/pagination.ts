import { Type, type Static, type TArray, type TInteger, type TObject, type TSchema } from 'typebox'

/**
 * The spec's list query: `limit` 1..100 (default 50) and `offset` >= 0
 * (default 0). Ajv applies the defaults, so handlers always see numbers.
 * `offset` stops at the largest safe integer: past it `1.6e32` passes as an
 * "integer" and is echoed back as a float.
 */
export const PageQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 50, description: 'page size, 1 to 100' })),
  offset: Type.Optional(Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, default: 0, description: 'items to skip' })),
})
export type PageQuery = Required<Static<typeof PageQuery>>

/** The page a list query asks for, with the defaults Ajv has already applied made visible to TypeScript. */
export function pageOf(query: { limit?: number | undefined; offset?: number | undefined }): PageQuery {
  return { limit: query.limit ?? 50, offset: query.offset ?? 0 }
}

/** A list's answer: one page of its items under `name`, with the limit and offset that chose it. */
export function PageOf<Name extends string, Item extends TSchema>(name: Name, item: Item): TObject<Record<Name, TArray<Item>> & { limit: TInteger; offset: TInteger }> {
  return Type.Object({ [name]: Type.Array(item), limit: Type.Integer(), offset: Type.Integer() } as Record<Name, TArray<Item>> & { limit: TInteger; offset: TInteger })
}
