import type { Plan } from '../accounts/plans.js'

/** Requests per minute one API key may make, by its account's plan; 0 means unlimited. */
export type RateLimits = Record<Plan, number>

/** The spec leaves the numbers open; these are ours (README.md lists them). */
export const DEFAULT_RATE_LIMITS: RateLimits = { free: 60, trial: 120, growth: 600, business: 1200 }

/** Rate-limit windows are fixed, one minute long. */
export const RATE_LIMIT_WINDOW_MS = 60_000
