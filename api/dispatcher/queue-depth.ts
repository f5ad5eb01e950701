import type { Plan } from '../accounts/plans.js'
import type { CommandRepository } from '../commands/command-repository.js'

/**
 * Commands waiting for their hand-off, summed by their account's plan
 * (`unknown` for an account that is gone): the queue-depth gauge, read when
 * /metrics is scraped. One query per account with waiting commands, each on
 * that account's waiting commands only.
 */
export async function queueDepthByPlan(commands: CommandRepository, planOf: (accountId: string) => Promise<Plan | null>): Promise<Record<string, number>> {
  const depth: Record<string, number> = {}
  for (const accountId of await commands.schedule.waitingAccounts()) {
    const waiting = await commands.waitingCount(accountId)
    if (waiting === 0) continue
    const plan = (await planOf(accountId)) ?? 'unknown'
    depth[plan] = (depth[plan] ?? 0) + waiting
  }
  return depth
}
