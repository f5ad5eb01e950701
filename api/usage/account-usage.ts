import type { FastifyInstance } from 'fastify'
import { usageByDay, usageWindowStart, type UsageReport } from './usage-report.js'

/** The usage report with the account's storage standing: what GET /api/v1/usage and the console's page answer. */
export interface AccountUsage extends UsageReport {
  storage: { stored_bytes: number; quota_bytes: number | null }
}

/** An account's usage over the `days` UTC days ending with `now`'s, read from the records and its storage count. */
export async function accountUsage(app: FastifyInstance, accountId: string, now: Date, days: number): Promise<AccountUsage> {
  const since = usageWindowStart(now, days)
  const [commands, files, standing] = await Promise.all([
    app.commands.usageRowsSince(accountId, since),
    app.files.storedRowsSince(accountId, since),
    app.files.quota.standing(accountId),
  ])
  return { storage: { stored_bytes: standing.storedBytes, quota_bytes: standing.quotaBytes }, ...usageByDay({ now, days, commands, files }) }
}
