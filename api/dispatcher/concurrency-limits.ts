import type { Plan } from '../accounts/plans.js'

/** Commands of one account handed to the executor and not yet ended, at most, by its plan; 0 means no limit. */
export type ConcurrencyLimits = Record<Plan, number>

/** Ours (the spec has none; README.md lists them): an account's burst waits its turn rather than filling every runner. */
export const DEFAULT_CONCURRENCY_LIMITS: ConcurrencyLimits = { free: 1, trial: 2, growth: 4, business: 8 }
