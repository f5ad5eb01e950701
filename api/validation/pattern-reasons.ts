import { filenameProblem } from '../../contracts/placeholders.js'
import { FFMPEG_COMMAND_PATTERN } from '../commands/schemas.js'
import { ffmpegCommandProblem, urlProblem } from '../commands/validation.js'
import { FILENAME_PATTERN, HTTP_URL_PATTERN } from './field-schemas.js'

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
])

export function patternReason(pattern: unknown, value: unknown): string | null {
  if (typeof pattern !== 'string' || typeof value !== 'string') return null
  return REASONS.get(pattern)?.(value) ?? null
}
