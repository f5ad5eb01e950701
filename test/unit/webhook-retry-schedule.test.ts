import t from 'tap'
import { MAX_ATTEMPTS, nextAttemptAt } from '../../api/webhooks/retry-schedule.js'

const failedAt = new Date('2026-01-01T00:00:00.000Z')
const seconds = (date: Date | null) => (date ? (date.getTime() - failedAt.getTime()) / 1000 : null)

t.test('follows the spec: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h after each failure', async (t) => {
  const table: Array<[number, number | null]> = [
    [1, 5],
    [2, 5 * 60],
    [3, 30 * 60],
    [4, 2 * 3600],
    [5, 5 * 3600],
    [6, 10 * 3600],
    [7, 10 * 3600],
    [8, null],
  ]
  for (const [failed, delay] of table) {
    t.equal(seconds(nextAttemptAt(failed, failedAt)), delay, `after attempt ${failed} fails`)
  }
})

t.test('makes eight attempts in all', async (t) => {
  t.equal(MAX_ATTEMPTS, 8)
})

t.test('refuses attempt numbers below 1', async (t) => {
  t.throws(() => nextAttemptAt(0, failedAt), RangeError)
  t.throws(() => nextAttemptAt(1.5, failedAt), RangeError)
})
