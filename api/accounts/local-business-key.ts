import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { AccountRepository } from './account-repository.js'

interface SavedKey {
  account_id: string
  key_id: string
}

/**
 * `npm start`'s ready-to-use key (DESIGN.md): one Business account per data
 * dir, whose key id is remembered in the data dir and revealed again on each
 * start. A new account and key replace it when the key no longer works
 * (revoked, plan changed, another database, a lost encryption key).
 */
export async function ensureLocalBusinessKey(accounts: AccountRepository, dataDir: string): Promise<{ account_id: string; api_key: string }> {
  const file = join(dataDir, 'local-api-key.json')
  const saved = await readFile(file, 'utf8').then((text) => JSON.parse(text) as SavedKey, () => null)
  if (saved) {
    // A key sealed with an encryption key that is gone cannot be opened: make a new one.
    const apiKey = await accounts.revealKey(saved.key_id).catch(() => null)
    const authenticated = apiKey ? await accounts.authenticate(apiKey) : null
    if (apiKey && authenticated?.plan === 'business') return { account_id: authenticated.id, api_key: apiKey }
  }
  const created = await accounts.createAccount('business', 'local')
  await mkdir(dataDir, { recursive: true, mode: 0o700 })
  await writeFile(file, JSON.stringify({ account_id: created.account_id, key_id: created.key_id } satisfies SavedKey), { mode: 0o600 })
  return { account_id: created.account_id, api_key: created.api_key }
}
