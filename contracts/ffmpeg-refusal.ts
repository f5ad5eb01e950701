/**
 * How the ffmpeg policy says no: a violation code and a message naming the
 * argument and the reason. The policy's parts (ffmpeg-policy.ts,
 * ffmpeg-inputs.ts, ffmpeg-filter-files.ts, ffmpeg-work-files.ts) throw
 * PolicyRefusal where the rule lives; applyFfmpegPolicy turns it into a value.
 */

/** Machine-readable reasons a command string is refused. */
export type PolicyViolationCode =
  | 'SHELL_SYNTAX'
  | 'CONTROL_CHARACTER'
  | 'NOT_FFMPEG'
  | 'OPTION_NOT_ALLOWED'
  | 'MISSING_VALUE'
  | 'VALUE_NOT_ALLOWED'
  | 'FORMAT_NOT_ALLOWED'
  | 'FILTERGRAPH_SYNTAX'
  | 'FILTER_NOT_ALLOWED'
  | 'FILTER_OPTION_NOT_ALLOWED'
  | 'INPUT_NOT_ALLOWED'
  | 'OUTPUT_NOT_ALLOWED'
  | 'UNKNOWN_PLACEHOLDER'
  | 'PLACEHOLDER_NOT_WHOLE_ARGUMENT'
  | 'TRAILING_OPTIONS'
  | 'NO_INPUT'
  | 'NO_OUTPUT'

/** A refused command: `message` names the argument and the reason. */
export interface PolicyViolation {
  code: PolicyViolationCode
  message: string
}

/** Thrown by the policy's rules; caught by applyFfmpegPolicy only. */
export class PolicyRefusal extends Error {
  override readonly name = 'PolicyRefusal'
  constructor(readonly violation: PolicyViolation) {
    super(violation.message)
  }
}

export function refuse(code: PolicyViolationCode, message: string): never {
  throw new PolicyRefusal({ code, message })
}
