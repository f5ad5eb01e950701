import t from 'tap'
import type { AuthenticatedAccount } from '../../api/accounts/account-repository.js'
import { KeyCache } from '../../api/accounts/key-cache.js'

const KEY = `ffsk_${'a'.repeat(64)}`

/** A key store the test edits, counting its reads; after `holdNext()` the next read sees the store, then waits for the returned release. */
function keyStore(initial: Record<string, AuthenticatedAccount>) {
  const keys: Record<string, AuthenticatedAccount | undefined> = { ...initial }
  let held: Promise<void> | undefined
  const store = {
    keys,
    reads: 0,
    holdNext(): () => void {
      let release!: () => void
      held = new Promise<void>((resolve) => (release = resolve))
      return release
    },
    read: async (apiKey: string): Promise<AuthenticatedAccount | null> => {
      store.reads += 1
      const seen = keys[apiKey] ?? null
      const wait = held
      held = undefined
      if (wait) await wait
      return seen
    },
  }
  return store
}

const account = (plan: AuthenticatedAccount['plan'] = 'growth'): AuthenticatedAccount => ({ id: 'acc_1', plan, keyId: 'key_1' })

t.test('a burst of requests with one key reads it once, until the entry is older than its lifetime', async (t) => {
  const store = keyStore({ [KEY]: account() })
  let time = 0
  const cache = new KeyCache(store.read, { ttlMs: 5_000, now: () => new Date(time) })
  const answers = await Promise.all([cache.authenticate(KEY), cache.authenticate(KEY), cache.authenticate(KEY)])
  time = 4_999
  answers.push(await cache.authenticate(KEY))
  t.same(answers, Array.from({ length: 4 }, () => account()))
  t.equal(store.reads, 1)
  time = 5_000
  await cache.authenticate(KEY)
  t.equal(store.reads, 2, 'read again once the entry has lived its lifetime')
})

t.test('a change to the key or its account drops the entry; a change to another keeps it', async (t) => {
  const store = keyStore({ [KEY]: account() })
  const cache = new KeyCache(store.read, { now: () => new Date(0) })
  await cache.authenticate(KEY)
  cache.changed({ kind: 'key', key_id: 'key_other' })
  cache.changed({ kind: 'account', account_id: 'acc_other' })
  await cache.authenticate(KEY)
  t.equal(store.reads, 1, 'changes to others leave it cached')
  store.keys[KEY] = account('business')
  cache.changed({ kind: 'account', account_id: 'acc_1' })
  t.same(await cache.authenticate(KEY), account('business'), 'the new plan after an account change')
  delete store.keys[KEY]
  cache.changed({ kind: 'key', key_id: 'key_1' })
  t.equal(await cache.authenticate(KEY), null, 'refused after the key changed')
  const reads = store.reads
  t.equal(await cache.authenticate(KEY), null)
  t.equal(store.reads, reads, 'a refused key is remembered: revocation is final')
})

t.test('while the feed is lost every request reads the store, and nothing read then is kept', async (t) => {
  const store = keyStore({ [KEY]: account() })
  const cache = new KeyCache(store.read, { now: () => new Date(0) })
  await cache.authenticate(KEY)
  cache.feedLost()
  await cache.authenticate(KEY)
  await cache.authenticate(KEY)
  t.equal(store.reads, 3, 'one read per request while lost')
  cache.feedRestored()
  await cache.authenticate(KEY)
  await cache.authenticate(KEY)
  t.equal(store.reads, 4, 'cached again once the feed is back')
})

t.test('a read that overlapped a revocation is read again, so it cannot let the key in after a refusal', async (t) => {
  const store = keyStore({ [KEY]: account() })
  const cache = new KeyCache(store.read, { now: () => new Date(0) })
  const release = store.holdNext()
  // This request's read sees the key still valid, then is held while the key is revoked.
  const early = cache.authenticate(KEY)
  await new Promise((resolve) => setImmediate(resolve))
  delete store.keys[KEY]
  cache.changed({ kind: 'key', key_id: 'key_1' })
  const later = await cache.authenticate(KEY)
  t.equal(later, null, 'a request after the revocation does not join the older read')
  release()
  t.equal(await early, null, 'the overlapping read was done again and saw the revocation')
  t.equal(store.reads, 3)
})
