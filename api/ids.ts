import { randomBytes } from 'node:crypto'

/** A resource id: a short type prefix and 32 hex characters, e.g. `sd_…` for destinations. */
export function newId(prefix: 'acc' | 'key' | 'file' | 'preset' | 'sd'): string {
  return `${prefix}_${randomBytes(16).toString('hex')}`
}
