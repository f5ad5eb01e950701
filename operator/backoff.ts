/**
 * Retry schedules, pure so tests can walk them without waiting. Time and
 * randomness are arguments; callers inject the real ones.
 */

/** base·2^failures, capped: the per-key delay of the work queue (no jitter, as client-go's item limiter). */
export function exponentialDelay(failures: number, baseMs: number, maxMs: number): number {
  if (failures <= 0) return 0
  // 2^n overflows to Infinity past ~1000; the cap holds either way.
  return Math.min(maxMs, baseMs * 2 ** (failures - 1))
}

/**
 * Exponential delay with "equal jitter": half fixed, half random, so replicas
 * that lost the same apiserver do not reconnect in lockstep yet never retry at once.
 */
export function jitteredDelay(failures: number, baseMs: number, maxMs: number, random: () => number): number {
  const delay = exponentialDelay(failures, baseMs, maxMs)
  return delay / 2 + (delay / 2) * random()
}
