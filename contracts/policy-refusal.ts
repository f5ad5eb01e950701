/**
 * How the argument policy's checks refuse: they throw a Refusal, which
 * applyFfmpegPolicy (ffmpeg-policy.ts) turns into a PolicyViolation. Shared
 * by the modules the policy is split into.
 */
import type { PolicyViolation, PolicyViolationCode } from './ffmpeg-policy.js'

export class Refusal extends Error {
  constructor(readonly violation: PolicyViolation) {
    super(violation.message)
  }
}

export function refuse(code: PolicyViolationCode, message: string): never {
  throw new Refusal({ code, message })
}
