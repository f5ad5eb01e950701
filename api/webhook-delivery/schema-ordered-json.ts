/**
 * JSON text in the key order a response schema declares, as Fastify's
 * serializer (fast-json-stringify) writes it: declared properties in schema
 * order but the required ones first, undeclared ones dropped, record (`patternProperties`) keys in the
 * value's own order. The webhook's `data` must be byte-for-byte the body of
 * `GET /commands/:id`, and the deliverer runs without a Fastify route to
 * borrow the serializer from.
 */

interface JsonSchema {
  type?: string
  required?: string[]
  properties?: Record<string, JsonSchema>
  patternProperties?: Record<string, JsonSchema>
  additionalProperties?: boolean | JsonSchema
  anyOf?: JsonSchema[]
  items?: JsonSchema
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** `value` rebuilt with the schema's key order; scalars pass through. */
export function orderBySchema(schema: JsonSchema, value: unknown): unknown {
  if (schema.anyOf) {
    if (value === null) return null
    const branch = schema.anyOf.find((s) => (Array.isArray(value) ? s.type === 'array' : isPlainObject(value) ? s.type === 'object' : false))
    return branch ? orderBySchema(branch, value) : value
  }
  if (Array.isArray(value)) return schema.items ? value.map((item) => orderBySchema(schema.items!, item)) : value
  if (!isPlainObject(value)) return value
  const out: Record<string, unknown> = {}
  const required = new Set(schema.required ?? [])
  // A stable sort, required first: fast-json-stringify's own order.
  const declared = Object.entries(schema.properties ?? {}).sort(([a], [b]) => Number(required.has(b)) - Number(required.has(a)))
  for (const [key, child] of declared) {
    if (value[key] !== undefined) out[key] = orderBySchema(child, value[key])
  }
  const pattern = schema.patternProperties ? Object.values(schema.patternProperties)[0] : undefined
  const extra = pattern ?? (isPlainObject(schema.additionalProperties) ? schema.additionalProperties : schema.additionalProperties === true ? {} : undefined)
  if (extra) {
    for (const [key, child] of Object.entries(value)) {
      if (!(key in out) && child !== undefined) out[key] = orderBySchema(extra, child)
    }
  }
  return out
}

/** JSON text of `value` as a route with response schema `schema` would send it. */
export function stringifyBySchema(schema: object, value: unknown): string {
  return JSON.stringify(orderBySchema(schema as JsonSchema, value))
}
