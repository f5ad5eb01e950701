import { systemClock, type Clock } from '../clock.js'
import type { AccountChanges } from './account-changes.js'
import type { Plan } from './plans.js'

/** How long a plan read is trusted: a plan change reaches the concurrency limit and the storage quota within this, at once where the change is heard. */
export const PLAN_CACHE_MS = 5_000

/** Past this many accounts the cache starts again empty: a bound, not a policy (each entry is a few dozen bytes). */
const MAX_ACCOUNTS = 10_000

/**
 * An account's plan, read at most once per `ttlMs` per account. The
 * dispatcher needs the plan for every command it hands off (its concurrency
 * limit), and reading it was one store round trip on every command's way to
 * its runner; a burst of one account's commands now reads it once. Reads in
 * flight are shared; a failed read is not kept, so the next call reads again.
 * `changes`: the account-change feed; an account's announced change (setPlan)
 * drops its entry, and a lost feed drops them all, so where the change is
 * heard (this process at once, other replicas over NATS) the next read is
 * fresh, and elsewhere the TTL bounds it.
 */
export function cachedPlans(
  read: (accountId: string) => Promise<Plan | null>,
  options: { ttlMs?: number; now?: Clock; changes?: AccountChanges | undefined } = {},
): (accountId: string) => Promise<Plan | null> {
  const ttlMs = options.ttlMs ?? PLAN_CACHE_MS
  const now = options.now ?? systemClock
  const entries = new Map<string, { plan: Promise<Plan | null>; readAt: number }>()
  options.changes?.listen({
    changed: (change) => {
      if (change.kind === 'account') entries.delete(change.account_id)
    },
    feedLost: () => entries.clear(),
    feedRestored: () => undefined,
  })
  return (accountId) => {
    const at = now().getTime()
    const entry = entries.get(accountId)
    if (entry && at - entry.readAt < ttlMs) return entry.plan
    if (entries.size >= MAX_ACCOUNTS) entries.clear()
    const plan = read(accountId)
    const fresh = { plan, readAt: at }
    entries.set(accountId, fresh)
    plan.catch(() => {
      if (entries.get(accountId) === fresh) entries.delete(accountId)
    })
    return plan
  }
}
