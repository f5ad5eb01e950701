import t from 'tap'
import { backwardSteps } from '../cluster/status-order.js'

t.test('backwardSteps finds each step a client saw go back, and nothing in a forward sequence', async (t) => {
  const cases: Array<[string[], Array<[string, string]>]> = [
    [[], []],
    [['QUEUED'], []],
    [['QUEUED', 'QUEUED', 'PROCESSING', 'PROCESSING', 'SUCCESS', 'SUCCESS'], []],
    [['QUEUED', 'FAILED'], []],
    [['PROCESSING', 'QUEUED'], [['PROCESSING', 'QUEUED']]],
    [['QUEUED', 'SUCCESS', 'PROCESSING'], [['SUCCESS', 'PROCESSING']]],
    [['SUCCESS', 'FAILED'], [['SUCCESS', 'FAILED']]],
    [['FAILED', 'SUCCESS', 'SUCCESS'], [['FAILED', 'SUCCESS']]],
    [['QUEUED', 'RUNNING'], [['QUEUED', 'RUNNING']]],
  ]
  for (const [seen, steps] of cases) t.same(backwardSteps(seen), steps, seen.join(' → ') || '(nothing seen)')
})
