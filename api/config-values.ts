/**
 * How api/config.ts reads one variable's value: each parser takes the
 * variable's name (for the message), its raw text and the default when unset,
 * and throws ConfigError naming the variable and what it must be.
 */
import { isIP } from 'node:net'
import { PLANS, type Plan } from './accounts/plans.js'

/** A variable was set to something this module cannot use. */
export class ConfigError extends Error {
  override name = 'ConfigError'
}

/** Which proxies' X-Forwarded-* headers to believe, in the forms Fastify's `trustProxy` takes. */
export type TrustProxy = boolean | string[]

export function parseBoolean(name: string, raw: string | undefined, fallback: boolean): boolean {
  if (raw === undefined || raw === '') return fallback
  if (['1', 'true', 'yes'].includes(raw.toLowerCase())) return true
  if (['0', 'false', 'no'].includes(raw.toLowerCase())) return false
  throw new ConfigError(`${name} must be 1/true/yes or 0/false/no, got "${raw}"`)
}

export function parseEnum<T extends string>(name: string, raw: string | undefined, allowed: readonly T[], fallback: T): T {
  if (raw === undefined || raw === '') return fallback
  if ((allowed as readonly string[]).includes(raw)) return raw as T
  throw new ConfigError(`${name} must be one of ${allowed.join(', ')}, got "${raw}"`)
}

/** A whole number of `what` of at least 0, where 0 means no limit. */
export function parseLimit(name: string, raw: string | undefined, fallback: number, what: string): number {
  if (raw === undefined || raw === '') return fallback
  if (!/^\d+$/.test(raw)) throw new ConfigError(`${name} must be a whole number of ${what} (0 = unlimited), got "${raw}"`)
  return Number(raw)
}

/** One parseLimit per plan, from the variable `name(PLAN)` (FREE, TRIAL, GROWTH, BUSINESS), each falling back to its plan's default. */
export function parsePerPlan(env: NodeJS.ProcessEnv, name: (plan: string) => string, defaults: Record<Plan, number>, what: string): Record<Plan, number> {
  const values = { ...defaults }
  for (const plan of PLANS) {
    const variable = name(plan.toUpperCase())
    values[plan] = parseLimit(variable, env[variable], defaults[plan], what)
  }
  return values
}

export function parseCount(name: string, raw: string | undefined, fallback: number): number {
  if (raw === undefined || raw === '') return fallback
  if (!/^\d+$/.test(raw) || Number(raw) < 1) throw new ConfigError(`${name} must be a whole number of at least 1, got "${raw}"`)
  return Number(raw)
}

/** proxy-addr's names for address ranges, accepted in a TRUST_PROXY list. */
const PROXY_RANGE_NAMES = ['loopback', 'linklocal', 'uniquelocal']

/**
 * TRUST_PROXY: unset or false trusts no proxy (the socket's peer is the
 * client); true trusts every peer; otherwise a comma list of the proxies'
 * addresses, CIDRs or range names. No hop count: Fastify refuses one, as it
 * cannot tell a proxy from a client that connects directly.
 */
export function parseTrustProxy(raw: string | undefined): TrustProxy {
  const value = raw?.trim() ?? ''
  if (['', 'false', 'no'].includes(value.toLowerCase())) return false
  if (['true', 'yes'].includes(value.toLowerCase())) return true
  if (/^\d+$/.test(value)) {
    throw new ConfigError(`TRUST_PROXY takes no hop count ("${value}"): it cannot tell a proxy from a client that connects directly; name the proxies' addresses or CIDRs, or use true or false`)
  }
  const entries = value.split(',').map((entry) => entry.trim())
  for (const entry of entries) {
    if (!isProxyAddress(entry)) {
      throw new ConfigError(`TRUST_PROXY must be true, false, or a comma list of proxy addresses and CIDRs (or ${PROXY_RANGE_NAMES.join(', ')}); "${entry}" is none of these`)
    }
  }
  return entries
}

function isProxyAddress(entry: string): boolean {
  if (PROXY_RANGE_NAMES.includes(entry)) return true
  const [address = '', prefix, ...rest] = entry.split('/')
  const family = isIP(address)
  if (family === 0 || rest.length > 0) return false
  return prefix === undefined || (/^\d+$/.test(prefix) && Number(prefix) <= (family === 4 ? 32 : 128))
}

export function optional(raw: string | undefined): string | undefined {
  return raw === undefined || raw === '' ? undefined : raw
}

