import { WEBHOOK_FAILURES_BEFORE_DISABLE } from '../webhooks/webhook-config-repository.js'

/**
 * "Consecutive failures" of an account-level webhook, derived from the
 * attempt log rather than counted in place: FerretDB 1.x updates are
 * read-modify-write, so concurrent `$inc`s from several deliverer replicas
 * lose counts, while a count read from the log is right whoever computes it.
 *
 * The run is the account-level attempts made under the current configuration
 * revision (PUT starts a new one), newest finished first, up to the first
 * success (of any command's delivery). Per-command URLs are not in it.
 */
export function consecutiveFailures(newestFirst: ReadonlyArray<{ outcome: 'success' | 'failure' }>): number {
  let run = 0
  for (const attempt of newestFirst) {
    if (attempt.outcome === 'success') break
    run++
  }
  return run
}

/** Whether a run of this length turns the account webhook off (spec: 8). */
export function disablesWebhook(run: number): boolean {
  return run >= WEBHOOK_FAILURES_BEFORE_DISABLE
}
