import t from 'tap'
import { cachedPlans } from '../../api/accounts/plan-cache.js'
import type { Plan } from '../../api/accounts/plans.js'

/** A plan store the test edits, counting its reads; `failNext` makes the next read reject. */
function planStore(initial: Record<string, Plan>) {
  const plans = { ...initial }
  const store = {
    plans,
    reads: 0,
    failNext: false,
    read: async (accountId: string): Promise<Plan | null> => {
      store.reads += 1
      if (store.failNext) {
        store.failNext = false
        throw new Error('store unreachable')
      }
      return plans[accountId] ?? null
    },
  }
  return store
}

t.test('a burst of one account reads its plan once', async (t) => {
  const store = planStore({ a: 'growth' })
  let time = 0
  const planOf = cachedPlans(store.read, { ttlMs: 5_000, now: () => new Date(time) })
  const plans = await Promise.all([planOf('a'), planOf('a'), planOf('a')])
  time = 4_999
  plans.push(await planOf('a'))
  t.same(plans, ['growth', 'growth', 'growth', 'growth'])
  t.equal(store.reads, 1, 'concurrent and later calls within the time to live share the first read')
})

t.test('a plan change is seen once the time to live has passed', async (t) => {
  const store = planStore({ a: 'free' })
  let time = 0
  const planOf = cachedPlans(store.read, { ttlMs: 5_000, now: () => new Date(time) })
  t.equal(await planOf('a'), 'free')
  store.plans.a = 'business'
  t.equal(await planOf('a'), 'free', 'within the time to live the plan read before holds')
  time = 5_000
  t.equal(await planOf('a'), 'business', 'then the account is read again')
  t.equal(store.reads, 2)
})

t.test('each account has its own entry, unknown accounts included', async (t) => {
  const store = planStore({ a: 'free', b: 'business' })
  const planOf = cachedPlans(store.read, { now: () => new Date(0) })
  t.same([await planOf('a'), await planOf('b'), await planOf('nobody'), await planOf('nobody')], ['free', 'business', null, null])
  t.equal(store.reads, 3)
})

t.test('a failed read is not kept: the next call reads again', async (t) => {
  const store = planStore({ a: 'trial' })
  const planOf = cachedPlans(store.read, { now: () => new Date(0) })
  store.failNext = true
  await t.rejects(planOf('a'), /store unreachable/)
  t.equal(await planOf('a'), 'trial')
  t.equal(store.reads, 2)
})
