import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'

/** `ffsk_` followed by 64 lowercase hex characters (32 random bytes), as the spec fixes. */
export const API_KEY_PATTERN = /^ffsk_[0-9a-f]{64}$/

export function generateApiKey(): string {
  return `ffsk_${randomBytes(32).toString('hex')}`
}

/** Keys are looked up by this hash; the key itself is only stored sealed. */
export function hashApiKey(apiKey: string): string {
  return createHash('sha256').update(apiKey).digest('hex')
}

/** Constant-time comparison of two hex hashes of equal length. */
export function hashesEqual(a: string, b: string): boolean {
  const left = Buffer.from(a, 'hex')
  const right = Buffer.from(b, 'hex')
  return left.length === right.length && timingSafeEqual(left, right)
}
