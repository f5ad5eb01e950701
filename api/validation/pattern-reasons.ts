import { filenameProblem } from '../../contracts/placeholders.js'
import { FFMPEG_COMMAND_PATTERN } from '../commands/schemas.js'
import { ffmpegCommandProblem, urlProblem } from '../commands/validation.js'
import { normalizeEndpointUrl, normalizePrefix, normalizePublicBaseUrl, validateBucket, validateRegion } from '../storage-destinations/destination-rules.js'
import { BUCKET_PATTERN, ENDPOINT_URL_PATTERN, PREFIX_PATTERN, PUBLIC_BASE_URL_PATTERN, REGION_PATTERN } from '../storage-destinations/schemas.js'
import { FILENAME_PATTERN, HTTP_URL_PATTERN } from './field-schemas.js'

/** A rule that throws "field: reason", as its reason alone (null when it accepts the value). */
function thrownReason(rule: (value: string) => unknown): (value: string) => string | null {
  return (value) => {
    try {
      rule(value)
      return null
    } catch (error) {
      return (error as Error).message.replace(/^[a-z_]+: /, '')
    }
  }
}

/**
 * The code's own reason for a value a schema pattern refused: a regular
 * expression can only say "no", the rule it encodes can say "must use http or
 * https, not ftp". Null when the code has no more to say than the schema.
 */
const REASONS = new Map<string, (value: string) => string | null>([
  [HTTP_URL_PATTERN, urlProblem],
  [FILENAME_PATTERN, (value) => {
    const problem = filenameProblem(value)
    return problem && `filename "${value}" ${problem}`
  }],
  [FFMPEG_COMMAND_PATTERN, ffmpegCommandProblem],
  // The pattern is the shape; the private-network switch is judged after it, by the route.
  [ENDPOINT_URL_PATTERN, thrownReason((value) => normalizeEndpointUrl(value, true))],
  [REGION_PATTERN, thrownReason(validateRegion)],
  [BUCKET_PATTERN, thrownReason(validateBucket)],
  [PREFIX_PATTERN, thrownReason(normalizePrefix)],
  [PUBLIC_BASE_URL_PATTERN, thrownReason(normalizePublicBaseUrl)],
])

export function patternReason(pattern: unknown, value: unknown): string | null {
  if (typeof pattern !== 'string' || typeof value !== 'string') return null
  return REASONS.get(pattern)?.(value) ?? null
}
