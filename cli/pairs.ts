import { UsageError } from './errors.js'

/**
 * `alias=value` options (`--in in_video=URL`, `--out out_small=small.mp4`,
 * `--metadata job=42`) as a map, split at the first `=`. Which aliases are
 * valid is the API's rule: it answers a bad one with a message naming it.
 * Pure.
 */
export function parsePairs(values: readonly string[], option: string): Record<string, string> {
  const map: Record<string, string> = {}
  for (const value of values) {
    const at = value.indexOf('=')
    if (at <= 0 || at === value.length - 1) throw new UsageError(`${option} takes NAME=VALUE, got "${value}"`)
    const name = value.slice(0, at)
    if (Object.hasOwn(map, name)) throw new UsageError(`${option} ${name} is given twice`)
    map[name] = value.slice(at + 1)
  }
  return map
}

/** Appends a repeated option's value (commander's collector). */
export function collect(value: string, previous: string[]): string[] {
  return [...previous, value]
}

/** A whole number for `option` in [min, max]; anything else (1.5, 1e3, "ten") is a usage error. Pure. */
export function parseWholeNumber(raw: string, option: string, min: number, max: number): number {
  if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) throw new UsageError(`${option} takes a whole number from ${min} to ${max}, got "${raw}"`)
  return Number(raw)
}

/** A positive decimal for `option` (`--vcpu 0.5`). Pure. */
export function parsePositiveNumber(raw: string, option: string): number {
  if (!/^(\d+(\.\d*)?|\.\d+)$/.test(raw) || Number(raw) <= 0) throw new UsageError(`${option} takes a positive number, got "${raw}"`)
  return Number(raw)
}

/** True for a value with a URL scheme (`https://…`, `s3://…`); anything else names a local file. Pure. */
export function looksLikeUrl(value: string): boolean {
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(value)
}
