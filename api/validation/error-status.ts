/**
 * Which status a schema-validation failure answers with. The spec gives each
 * endpoint a status for bad input (400 INVALID_REQUEST on most, 422 on the
 * yt-dlp and execute endpoints) and names some faults 422 even where the rest
 * is 400: excess metadata, an invalid URL, a malformed destination id, too
 * many commands. Those constraints live in the TypeBox schemas, annotated with
 * `answersWith(422)`, so the status sits beside the rule it belongs to and the
 * OpenAPI document shows it (`x-error-status`, an OpenAPI extension).
 */
export const ERROR_STATUS_KEYWORD = 'x-error-status'

export type ErrorStatus = 400 | 422

/** Schema options: failures of this schema (and beneath it) answer with `status`. */
export function answersWith(status: ErrorStatus): { [ERROR_STATUS_KEYWORD]: ErrorStatus } {
  return { [ERROR_STATUS_KEYWORD]: status }
}

type SchemaNode = Record<string, unknown>

const KEPT_AT_ANNOTATION = new Set(['type', 'minItems', 'minProperties', 'required'])

function isNode(value: unknown): value is SchemaNode {
  return typeof value === 'object' && value !== null
}

function pathSegments(schemaPath: string): string[] {
  // Ajv percent-encodes keys in schema paths (a patternProperties key `^.*$` is `%5E.*%24`).
  return schemaPath.replace(/^#\/?/, '').split('/').filter(Boolean).map((s) => decodeSegment(s).replaceAll('~1', '/').replaceAll('~0', '~'))
}

function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment)
  } catch {
    return segment
  }
}

/** The schema holding the keyword that failed at `schemaPath`, for a message that can say what was expected. */
export function schemaAtFailure(schema: unknown, schemaPath: string): SchemaNode | null {
  let node: unknown = schema
  for (const segment of pathSegments(schemaPath).slice(0, -1)) {
    if (!isNode(node)) return null
    node = node[segment]
  }
  return isNode(node) ? node : null
}

/**
 * The status for Ajv's failure at `schemaPath` (e.g.
 * `#/properties/metadata/maxProperties`) in `schema`: the nearest annotation on
 * the way to the failing keyword, else `fallback`. A wrong JSON type or an
 * empty list on the annotated field itself (or a branch of its union, as for
 * nullable metadata) keeps `fallback`: `file_url: 7`, `metadata: "x"` and
 * `ffmpeg_commands: []` are invalid or missing values (400) where a malformed
 * URL, eleven metadata keys or eleven commands are 422.
 */
export function statusForFailure(schema: unknown, schemaPath: string, fallback: ErrorStatus): ErrorStatus {
  const segments = pathSegments(schemaPath)
  const keyword = segments.pop()
  let node: unknown = schema
  let status: ErrorStatus = fallback
  // Segments walked since the nearest annotation: none, or only a union branch, means "at the annotated field itself".
  let sinceAnnotation: string[] | null = null
  const visit = (value: unknown, segment?: string) => {
    if (isNode(value) && value[ERROR_STATUS_KEYWORD] !== undefined) {
      status = value[ERROR_STATUS_KEYWORD] as ErrorStatus
      sinceAnnotation = []
    } else if (sinceAnnotation && segment !== undefined) {
      sinceAnnotation.push(segment)
    }
  }
  visit(node)
  for (const segment of segments) {
    if (!isNode(node)) return fallback
    node = node[segment]
    visit(node, segment)
  }
  const atAnnotatedField = sinceAnnotation !== null && isUnionBranch(sinceAnnotation)
  if (atAnnotatedField && keyword !== undefined && KEPT_AT_ANNOTATION.has(keyword)) return fallback
  return status
}

function isUnionBranch(segments: string[]): boolean {
  return segments.length === 0 || (segments.length === 2 && (segments[0] === 'anyOf' || segments[0] === 'oneOf'))
}
