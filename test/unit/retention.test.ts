import t from 'tap'
import { InvalidRequestError } from '../../api/errors/api-errors.js'
import { dayLists, expiryFields, expiryOf, resolveRetentionDays, type RetentionDaysByPlan } from '../../api/files/retention.js'

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

t.test("a file's expiry day is the UTC day of its expiry, none when kept until deleted", async (t) => {
  t.same(expiryFields(new Date('2026-03-01T23:59:59.999Z')), { expires_at: new Date('2026-03-01T23:59:59.999Z'), expires_on: '2026-03-01' })
  t.same(expiryFields(new Date('2026-03-02T00:00:00Z')).expires_on, '2026-03-02', 'midnight starts the next day')
  t.same(expiryFields(null), { expires_at: null, expires_on: null })
})

t.test('the due days are listed from the first to the last, in lists of a given length', async (t) => {
  t.same(dayLists('2026-02-27', '2026-03-02', 2), [['2026-02-27', '2026-02-28'], ['2026-03-01', '2026-03-02']], 'across a month end of a common year')
  t.same(dayLists('2028-02-28', '2028-03-01', 10), [['2028-02-28', '2028-02-29', '2028-03-01']], 'a leap day is a day')
  t.same(dayLists('2026-12-31', '2027-01-01', 1), [['2026-12-31'], ['2027-01-01']])
  t.same(dayLists('2026-03-01', '2026-03-01', 366), [['2026-03-01']], 'one day')
  t.same(dayLists('2026-03-02', '2026-03-01', 366), [], 'none when the first is after the last')
  t.equal(dayLists('2016-03-01', '2026-03-01', 366).flat().length, 3653, 'ten years and a day, leap days included')
})
