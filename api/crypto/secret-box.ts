import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto'

/** A value sealed with AES-256-GCM; `kid` names the key so keys can rotate. */
export interface SealedValue {
  kid: string
  iv: string
  tag: string
  data: string
}

/**
 * Encrypts values at rest (API keys, destination credentials) with AES-256-GCM.
 * Seals with the first key; opens with whichever key the value names, so an
 * old key stays listed until every value sealed with it has been re-sealed.
 */
export class SecretBox {
  readonly #keys: Map<string, Buffer>
  readonly #current: string

  /** `keys` maps key id to 32 raw bytes; the first entry seals new values. */
  constructor(keys: ReadonlyArray<readonly [string, Buffer]>) {
    const first = keys[0]
    if (!first) throw new Error('SecretBox needs at least one key')
    for (const [kid, key] of keys) {
      if (key.length !== 32) throw new Error(`encryption key ${kid} must be 32 bytes, got ${key.length}`)
    }
    this.#keys = new Map(keys)
    this.#current = first[0]
  }

  seal(plaintext: string): SealedValue {
    const iv = randomBytes(12)
    const cipher = createCipheriv('aes-256-gcm', this.#keys.get(this.#current)!, iv)
    const data = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()])
    return { kid: this.#current, iv: iv.toString('base64'), tag: cipher.getAuthTag().toString('base64'), data: data.toString('base64') }
  }

  open(sealed: SealedValue): string {
    const key = this.#keys.get(sealed.kid)
    if (!key) throw new Error(`no encryption key with id ${sealed.kid}`)
    const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(sealed.iv, 'base64'))
    decipher.setAuthTag(Buffer.from(sealed.tag, 'base64'))
    return Buffer.concat([decipher.update(Buffer.from(sealed.data, 'base64')), decipher.final()]).toString('utf8')
  }
}

/**
 * Parses ENCRYPTION_KEYS: comma-separated `id:base64key` pairs, the first one
 * current, e.g. `k2:…,k1:…` while rotating from k1 to k2.
 */
export function parseEncryptionKeys(raw: string): Array<[string, Buffer]> {
  return raw
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean)
    .map((entry) => {
      const colon = entry.indexOf(':')
      if (colon < 1) throw new Error('each encryption key must be written id:base64key')
      return [entry.slice(0, colon), Buffer.from(entry.slice(colon + 1), 'base64')] as [string, Buffer]
    })
}
