import type { AccountRepository } from '../accounts/account-repository.js'
import { API_KEY_PATTERN } from '../accounts/api-keys.js'
import { isPlan, PLANS, type Plan } from '../accounts/plans.js'
import type { SignInLinkRepository } from '../console/sign-in-link-repository.js'
import type { StorageQuota } from '../files/storage-quota.js'

/** A command line that names no command, or a command with missing or bad options: exit 2. */
export class UsageError extends Error {
  override name = 'UsageError'
}

/** A well-formed command that could not be carried out, e.g. an unknown account: exit 1. */
export class AdminError extends Error {
  override name = 'AdminError'
}

export type AdminOptions = Record<string, string | undefined>

/** What the commands work on. */
export interface AdminContext {
  accounts: AccountRepository
  signInLinks: SignInLinkRepository
  /** The storage quota's count, and which files hold bytes (recount-storage). */
  storage: { quota: StorageQuota; fileHoldings: (ids: string[]) => Promise<Map<string, 'live' | 'gone'>> }
  sleep(ms: number): Promise<void>
  /** Where the console is served when --base-url is not given: http://127.0.0.1:PORT. */
  defaultBaseUrl: string
  now(): Date
}

export interface AdminCommand {
  /** The options it takes, for the usage text; `?` marks optional ones. */
  usage: string
  run(context: AdminContext, options: AdminOptions): Promise<Record<string, unknown>>
}

function required(options: AdminOptions, name: string): string {
  const value = options[name]
  if (value === undefined || value === '') throw new UsageError(`--${name} is required`)
  return value
}

function plan(options: AdminOptions): Plan {
  const value = required(options, 'plan')
  if (!isPlan(value)) throw new UsageError(`--plan must be one of ${PLANS.join(', ')}, got "${value}"`)
  return value
}

async function existingAccount(accounts: AccountRepository, accountId: string): Promise<void> {
  if (!(await accounts.findAccount(accountId))) throw new AdminError(`no account ${accountId}`)
}

/** The admin CLI's commands (DESIGN.md); each returns the JSON it prints. */
export const ADMIN_COMMANDS: Record<string, AdminCommand> = {
  'create-account': {
    usage: '--plan free|trial|growth|business [--name NAME]',
    async run({ accounts }, options) {
      const created = await accounts.createAccount(plan(options), options.name ?? null)
      return { account_id: created.account_id, api_key: created.api_key, key_id: created.key_id }
    },
  },
  'create-key': {
    usage: '--account ACCOUNT_ID',
    async run({ accounts }, options) {
      const accountId = required(options, 'account')
      await existingAccount(accounts, accountId)
      const created = await accounts.createKey(accountId)
      return { account_id: accountId, api_key: created.api_key, key_id: created.key_id }
    },
  },
  'revoke-key': {
    usage: '--key KEY_ID|API_KEY',
    async run({ accounts }, options) {
      const given = required(options, 'key')
      // The key itself also works, for whoever has it but not its id.
      const keyId = API_KEY_PATTERN.test(given) ? await accounts.keyIdOf(given) : given
      if (!keyId || !(await accounts.revokeKey(keyId))) throw new AdminError(`no active API key ${API_KEY_PATTERN.test(given) ? 'matches the one given' : given}`)
      return { key_id: keyId, revoked: true }
    },
  },
  'set-plan': {
    usage: '--account ACCOUNT_ID --plan free|trial|growth|business',
    async run({ accounts }, options) {
      const accountId = required(options, 'account')
      const next = plan(options)
      if (!(await accounts.setPlan(accountId, next))) throw new AdminError(`no account ${accountId}`)
      return { account_id: accountId, plan: next }
    },
  },
  'recount-storage': {
    usage: '--account ACCOUNT_ID [--settle-seconds 60]',
    async run({ accounts, storage, sleep }, options) {
      const accountId = required(options, 'account')
      const settle = settleSeconds(options)
      await existingAccount(accounts, accountId)
      const before = (await storage.quota.standing(accountId)).storedBytes
      const released = await storage.quota.repair(accountId, storage.fileHoldings, () => sleep(settle * 1000))
      const after = (await storage.quota.standing(accountId)).storedBytes
      return { account_id: accountId, stored_bytes_before: before, stored_bytes: after, released }
    },
  },
  'console-link': {
    usage: '--account ACCOUNT_ID [--base-url URL]',
    async run({ accounts, signInLinks, defaultBaseUrl, now }, options) {
      const accountId = required(options, 'account')
      const baseUrl = baseUrlOf(options['base-url'] ?? defaultBaseUrl)
      await existingAccount(accounts, accountId)
      const link = await signInLinks.issue(accountId, now())
      // In the fragment: it never reaches a server, a log or a Referer; the page POSTs it when the user confirms.
      return { account_id: accountId, url: `${baseUrl}/console/#/sign-in/link/${link.token}`, expires_at: link.expires_at.toISOString() }
    },
  },
}

/** How long recount-storage waits before it takes a file with no record for one a crash left: far past a reservation's way to its record. */
const DEFAULT_SETTLE_SECONDS = 60

function settleSeconds(options: AdminOptions): number {
  const raw = options['settle-seconds']
  if (raw === undefined) return DEFAULT_SETTLE_SECONDS
  if (!/^\d+$/.test(raw)) throw new UsageError(`--settle-seconds must be a whole number of seconds, got "${raw}"`)
  return Number(raw)
}

/** An http(s) base URL without a trailing slash. */
function baseUrlOf(raw: string): string {
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    throw new UsageError(`--base-url must be an http(s) URL, got "${raw}"`)
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new UsageError(`--base-url must be an http(s) URL, got "${raw}"`)
  return `${url.origin}${url.pathname.replace(/\/+$/, '')}`
}

/** The usage text the CLI prints on a usage error. */
export function usage(): string {
  const lines = Object.entries(ADMIN_COMMANDS).map(([name, command]) => `  npm run -s admin -- ${name} ${command.usage}`)
  return ['usage:', ...lines].join('\n')
}
