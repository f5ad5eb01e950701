/**
 * Delay before the next hand-off after `attempts` failed ones: 1 s, 2 s, 4 s …
 * doubling up to 60 s. No cap on attempts: an accepted command is never
 * dropped, and an executor outage only slows the retries down.
 */
export function dispatchBackoffMs(attempts: number, baseMs = 1_000, maxMs = 60_000): number {
  if (attempts < 1) return 0
  return Math.min(maxMs, baseMs * 2 ** Math.min(attempts - 1, 30))
}
