import type { FastifySchemaValidationError } from 'fastify'
import { schemaAtFailure } from './error-status.js'
import { patternReason } from './pattern-reasons.js'

const withArticle = (type: string) => (/^[aeiou]/.test(type) ? `an ${type}` : `a ${type}`)

function oneOf(types: string[]): string {
  const [last, ...rest] = [...types].reverse()
  return rest.length === 0 ? withArticle(last ?? 'value') : `${withArticle(rest.reverse().join(', '))} or ${last}`
}

/**
 * Turns Ajv's first failure into "field: reason", naming the field as the
 * client wrote it (`body.commands[1].output_files`). Where a schema says in
 * words what it wants (a `description` starting "must"), that is the reason:
 * "body.input_files.in_video: must be an absolute http(s) URL ..."; a refused
 * pattern gives the code's own reason where it has one. Needs Ajv's `verbose`
 * (the failing value in each error).
 */
export function describeFailure(errors: readonly FastifySchemaValidationError[], context: string, schema: unknown): string {
  const first = errors[0]
  if (!first) return `${context} is invalid`
  const path = first.instancePath.replace(/^\//, '').replace(/\/(\d+)(?=\/|$)/g, '[$1]').replaceAll('/', '.')
  const at = [context, path].filter(Boolean).join('.')
  const params = first.params as { missingProperty?: string; additionalProperty?: string; limit?: number; type?: string }
  const failing = schemaAtFailure(schema, first.schemaPath)
  const said = typeof failing?.description === 'string' && failing.description.startsWith('must ') ? failing.description : undefined

  const key = (first as { propertyName?: string }).propertyName
  if (key !== undefined) return `${at}: key ${JSON.stringify(key)} ${said ?? `must match ${String(failing?.pattern)}`}`
  if (params.additionalProperty !== undefined) return `${at}.${params.additionalProperty} is not a known field`
  // `anyOf` of `required` lists ("at least one of"): the schema's own words, not the first branch's.
  const union = errors.find((e) => e.keyword === 'anyOf' && e.instancePath === first.instancePath)
  const unionSaid = union && schemaAtFailure(schema, union.schemaPath)?.description
  if (first.keyword === 'required' && typeof unionSaid === 'string' && unionSaid.startsWith('must ')) return `${at}: ${unionSaid}`
  if (params.missingProperty !== undefined) return `${at}.${params.missingProperty} is required`
  // A union of a constant and another shape (`true` or a list) fails on each branch: Ajv's "must be
  // equal to constant" or "must be a boolean or array" name neither choice; the union's own words do.
  if ((first.keyword === 'const' || first.keyword === 'type') && union?.instancePath === first.instancePath && typeof unionSaid === 'string' && unionSaid.startsWith('must ')) return `${at}: ${unionSaid}`
  if (first.keyword === 'not' && typeof failing?.description === 'string') return `${at}: ${failing.description}`
  if (first.keyword === 'type') {
    // A union (string, number or boolean; object or null) fails once per branch, at the same place.
    const types = errors.filter((e) => e.keyword === 'type' && e.instancePath === first.instancePath).map((e) => String((e.params as { type?: string }).type))
    return `${at}: must be ${oneOf([...new Set(types)])}`
  }
  if (first.keyword === 'pattern') {
    const reason = patternReason(failing?.pattern, (first as { data?: unknown }).data)
    if (reason) return `${at}: ${reason}`
  }
  if (said) return `${at}: ${said}`
  if (first.keyword === 'maxProperties') return `${at}: at most ${params.limit} keys are allowed`
  if (first.keyword === 'minProperties') return `${at}: at least ${params.limit} ${params.limit === 1 ? 'entry is' : 'entries are'} required`
  if (first.keyword === 'maxItems') return `${at}: at most ${params.limit} items are allowed`
  if (first.keyword === 'minItems') return `${at}: at least ${params.limit} ${params.limit === 1 ? 'item is' : 'items are'} required`
  return `${at} ${first.message ?? 'is invalid'}`
}
