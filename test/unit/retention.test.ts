import t from 'tap'
import { InvalidRequestError } from '../../api/errors/api-errors.js'
import { expiryOf, resolveRetentionDays, type RetentionDaysByPlan } from '../../api/files/retention.js'

const byPlan: RetentionDaysByPlan = { free: 1, trial: 7, growth: 30, business: 0 }

t.test('a command keeps its outputs as long as its plan, or as long as it asks up to that', async (t) => {
  t.equal(resolveRetentionDays(undefined, 'growth', byPlan, 'retention_days', InvalidRequestError), 30)
  t.equal(resolveRetentionDays(5, 'growth', byPlan, 'retention_days', InvalidRequestError), 5)
  t.equal(resolveRetentionDays(30, 'growth', byPlan, 'retention_days', InvalidRequestError), 30, 'the plan\'s own retention')
  t.throws(() => resolveRetentionDays(8, 'trial', byPlan, 'commands[2].retention_days', InvalidRequestError), { name: 'InvalidRequestError', message: 'commands[2].retention_days: at most 7 on the trial plan (its retention), got 8' })
})

t.test('a plan with retention 0 keeps files until deleted, and a command may still ask for a retention', async (t) => {
  t.equal(resolveRetentionDays(undefined, 'business', byPlan, 'retention_days', InvalidRequestError), null)
  t.equal(resolveRetentionDays(3650, 'business', byPlan, 'retention_days', InvalidRequestError), 3650)
})

t.test('a file expires whole days after it is stored, never when kept until deleted', async (t) => {
  t.same(expiryOf(new Date('2026-02-27T13:45:00.123Z'), 2), new Date('2026-03-01T13:45:00.123Z'), 'across the end of February')
  t.equal(expiryOf(new Date('2026-02-27T13:45:00Z'), null), null)
})
