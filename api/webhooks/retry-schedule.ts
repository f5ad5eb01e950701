/**
 * The spec's webhook retry schedule: the delay before each attempt, counted
 * from the failure of the one before it. Attempt 1 goes at once; after the
 * 8th failure there is no further attempt.
 */
const SECOND = 1_000
const MINUTE = 60 * SECOND
const HOUR = 60 * MINUTE

export const DELAY_BEFORE_ATTEMPT_MS: readonly number[] = [
  0, // attempt 1: immediately
  5 * SECOND,
  5 * MINUTE,
  30 * MINUTE,
  2 * HOUR,
  5 * HOUR,
  10 * HOUR,
  10 * HOUR, // attempt 8
]

export const MAX_ATTEMPTS = DELAY_BEFORE_ATTEMPT_MS.length

/**
 * When attempt `failedAttempt + 1` is due, given that attempt `failedAttempt`
 * (1-based) failed at `failedAt`; null when the schedule is exhausted.
 */
export function nextAttemptAt(failedAttempt: number, failedAt: Date): Date | null {
  if (!Number.isInteger(failedAttempt) || failedAttempt < 1) throw new RangeError(`attempt numbers start at 1, got ${failedAttempt}`)
  const delay = DELAY_BEFORE_ATTEMPT_MS[failedAttempt]
  return delay === undefined ? null : new Date(failedAt.getTime() + delay)
}
