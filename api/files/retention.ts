/**
 * How long managed files are kept: per plan, a number of days after a file is
 * stored (RETENTION_DAYS_<PLAN>; 0 = until deleted), which is also the
 * longest a command may ask for with `retention_days`. The expiry is written
 * on the file's record when the file is stored (`expires_at`), so a later
 * plan change or config change does not move the expiry of files stored
 * before it. Files in a customer's bucket never expire. Pure.
 */
import { Type } from 'typebox'
import type { Plan } from '../accounts/plans.js'
import type { ApiError } from '../errors/api-errors.js'

/** Days a plan keeps files, and the most a command may ask for; 0 = kept until deleted. */
export type RetentionDaysByPlan = Record<Plan, number>

/**
 * The hosted peers keep outputs 24 hours (Rendi, Transloadit) or 7 to 30
 * days (Rendobar): free keeps a day, a trial a week, the paid plans a month
 * and a quarter.
 */
export const DEFAULT_RETENTION_DAYS: RetentionDaysByPlan = { free: 1, trial: 7, growth: 30, business: 90 }

/** The longest retention a plan or a command may set: ten years, far below a Date's range. */
export const MAX_RETENTION_DAYS_CEILING = 3650

const DAY_MS = 86_400_000

/** The request field every command endpoint and preset execute accept. */
export const RetentionDaysField = Type.Integer({
  minimum: 1,
  maximum: MAX_RETENTION_DAYS_CEILING,
  description:
    "days this command's managed outputs are kept before they are deleted (is_deleted true, data removed), counted from when they are stored; at most the plan's retention, which is also the default. Outputs sent to a storage destination are never deleted",
})

/**
 * The days a command's managed outputs are kept on `plan`: the plan's
 * retention, or the shorter one the request asked for; null = until deleted.
 * Asking for more than the plan keeps is `Fault` naming `field`.
 */
export function resolveRetentionDays(
  requested: number | undefined,
  plan: Plan,
  byPlan: RetentionDaysByPlan,
  field: string,
  Fault: new (message: string) => ApiError,
): number | null {
  const planDays = planRetentionDays(plan, byPlan)
  if (requested === undefined) return planDays
  if (planDays !== null && requested > planDays) {
    throw new Fault(`${field}: at most ${planDays} on the ${plan} plan (its retention), got ${requested}`)
  }
  return requested
}

/** When a file stored at `storedAt` and kept `days` expires; null for a file kept until deleted. */
export function expiryOf(storedAt: Date, days: number | null): Date | null {
  return days === null ? null : new Date(storedAt.getTime() + days * DAY_MS)
}

/**
 * A file record's expiry: `expires_at`, and beside it `expires_on`, its UTC
 * day (`YYYY-MM-DD`), the retention sweep's key. The embedded store finds
 * records by equality on a top-level string through an index but compares
 * dates only after reading every record (api/store-compatibility.ts), so the
 * sweep asks for the due days by name. Both null for a file kept until deleted.
 */
export function expiryFields(expiresAt: Date | null): { expires_at: Date | null; expires_on: string | null } {
  return { expires_at: expiresAt, expires_on: expiresAt === null ? null : dayOf(expiresAt) }
}

/** The UTC day of `at`, `YYYY-MM-DD`. */
export function dayOf(at: Date): string {
  return at.toISOString().slice(0, 10)
}

/**
 * The days from `first` to `last` (both `YYYY-MM-DD`, inclusive), in order,
 * in lists of at most `perList`: the sweep's queries, one list each. Empty
 * when `first` is after `last`.
 */
export function dayLists(first: string, last: string, perList: number): string[][] {
  const lists: string[][] = []
  let list: string[] = []
  for (let at = Date.parse(`${first}T00:00:00Z`), end = Date.parse(`${last}T00:00:00Z`); at <= end; at += DAY_MS) {
    list.push(dayOf(new Date(at)))
    if (list.length === perList) {
      lists.push(list)
      list = []
    }
  }
  if (list.length > 0) lists.push(list)
  return lists
}

/** The days `plan` keeps a file (uploads and store-file files, and commands that name no retention_days); null = until deleted. */
export function planRetentionDays(plan: Plan, byPlan: RetentionDaysByPlan): number | null {
  return byPlan[plan] === 0 ? null : byPlan[plan]
}
