import { MongoClient } from 'mongodb'
import t from 'tap'
import { fileHoldings } from '../../api/files/file-holdings.js'
import { StorageQuota } from '../../api/files/storage-quota.js'
import { startMongo } from '../harness/mongo.js'

/*
 * The quota's reservation is one conditional write: reservations racing on
 * one account never pass the quota together, and retried reservations and
 * releases count once (api/files/storage-quota.ts). Against the store the
 * tests run on (the patched FerretDB, or MONGODB_URL's server).
 */

t.test('storage reservations against a real store', async (t) => {
  const mongo = await startMongo(t)
  // One connection per racer, so the server sees the writes at once.
  const client = await MongoClient.connect(mongo.url, { maxPoolSize: 40, minPoolSize: 40 })
  t.teardown(() => client.close())
  const db = client.db(mongo.dbName)
  const quota = new StorageQuota(db, { free: 1000, trial: 0, growth: 0, business: 0 }, async (accountId) => (accountId.startsWith('free') ? 'free' : 'business'))

  t.test('40 racing reservations of 100 bytes on a 1,000-byte quota: exactly 10 land', async (t) => {
    const results = await Promise.all(Array.from({ length: 40 }, (_, i) => quota.reserve('free-race', [{ id: `file_${i}`, bytes: 100 }])))
    t.equal(results.filter((result) => result.reserved).length, 10)
    for (const refused of results.filter((result) => !result.reserved)) t.match(refused, { quotaBytes: 1000, requestedBytes: 100 })
    t.same(await quota.standing('free-race'), { storedBytes: 1000, quotaBytes: 1000 })
  })

  t.test('racing first reservations of an account with no record yet all land when they fit together', async (t) => {
    // Each finds no record, one creates it: a reservation that then reads the new, empty record must write again, not refuse.
    for (const round of [1, 2, 3]) {
      const account = `free-first-${round}`
      const results = await Promise.all(Array.from({ length: 30 }, (_, i) => quota.reserve(account, [{ id: `file_${i}`, bytes: 10 }])))
      t.equal(results.filter((result) => result.reserved).length, 30, `round ${round}: 30 of 10 bytes fit in 1,000`)
      t.same(await quota.standing(account), { storedBytes: 300, quotaBytes: 1000 })
    }
  })

  t.test('a retried reservation or release counts once; several files reserve all or none', async (t) => {
    t.same(await quota.reserve('free-retry', [{ id: 'file_a', bytes: 300 }]), { reserved: true })
    t.same(await quota.reserve('free-retry', [{ id: 'file_a', bytes: 300 }]), { reserved: true }, 'a replayed reservation is reserved')
    t.equal((await quota.standing('free-retry')).storedBytes, 300, 'and not counted twice')
    t.match(await quota.reserve('free-retry', [{ id: 'file_b', bytes: 400 }, { id: 'file_c', bytes: 400 }]), { reserved: false, storedBytes: 300, requestedBytes: 800 })
    t.equal((await quota.standing('free-retry')).storedBytes, 300, 'neither of two that do not fit together is counted')
    t.same(await quota.reserve('free-retry', [{ id: 'file_b', bytes: 400 }, { id: 'file_c', bytes: 300 }]), { reserved: true })
    t.equal((await quota.standing('free-retry')).storedBytes, 1000)
    const releases = await Promise.all([quota.release('free-retry', 'file_b'), quota.release('free-retry', 'file_b')])
    t.same(releases.sort(), [0, 400], 'two racing releases of one file free it once')
    t.equal(await quota.release('free-retry', 'file_unknown'), 0)
    t.same(await quota.standing('free-retry'), { storedBytes: 600, quotaBytes: 1000 })
  })

  t.test('an unlimited plan counts without refusing', async (t) => {
    t.same(await quota.reserve('business-1', [{ id: 'file_x', bytes: 5 * 1024 ** 4 }]), { reserved: true })
    t.same(await quota.standing('business-1'), { storedBytes: 5 * 1024 ** 4, quotaBytes: null })
    t.equal(await quota.requireRoom('business-1', 'file'), Infinity, 'room without end')
  })

  t.test('a repair frees the holds of deleted, FAILED and never-recorded files, and not of one recorded while it waits', async (t) => {
    const files = db.collection<{ _id: string; status: string; is_deleted: boolean }>('files')
    const holds = { file_live: 100, file_deleted: 200, file_failed: 300, file_lost: 50, file_late: 25 }
    t.same(await quota.reserve('free-repair', Object.entries(holds).map(([id, bytes]) => ({ id, bytes }))), { reserved: true })
    await files.insertMany([
      { _id: 'file_live', status: 'STORED', is_deleted: false },
      { _id: 'file_deleted', status: 'STORED', is_deleted: true },
      { _id: 'file_failed', status: 'FAILED', is_deleted: false },
    ])
    // While the repair waits, the record of file_late lands: the reservation was in flight, not lost.
    const released = await quota.repair('free-repair', fileHoldings(db), async () => {
      await files.insertOne({ _id: 'file_late', status: 'PROCESSING', is_deleted: false })
    })
    t.same(released, { file_deleted: 200, file_failed: 300, file_lost: 50 })
    t.same(await quota.standing('free-repair'), { storedBytes: 125, quotaBytes: 1000 }, 'what the live and the late file hold')
    let waited = false
    t.same(await quota.repair('free-repair', fileHoldings(db), async () => void (waited = true)), {}, 'a second repair frees nothing')
    t.notOk(waited, 'and waits for nothing when every held file has a record')
  })

  t.test('at the quota, requireRoom refuses with 403 STORAGE_QUOTA_EXCEEDED naming the field and the bytes', async (t) => {
    await t.rejects(quota.requireRoom('free-race', 'output_files'), { statusCode: 403, code: 'STORAGE_QUOTA_EXCEEDED', message: /^output_files: the account stores .*\(1000 bytes\), all of the plan's storage quota of .*\(1000 bytes\)/ })
    t.equal(await quota.requireRoom('free-retry', 'file'), 400, 'below the quota: the room left')
    await t.rejects(quota.requireRoom('business-1', 'file', 'free'), { code: 'STORAGE_QUOTA_EXCEEDED' }, 'the plan a request already knows is the one applied, not read again')
  })
})
