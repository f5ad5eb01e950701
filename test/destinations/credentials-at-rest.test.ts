/**
 * A destination's credentials at rest and in logs: sealed with the current
 * ENCRYPTION_KEYS key, still readable after rotating to a new key, re-sealed
 * on a credentials PATCH, and never written to a log line.
 */
import { randomBytes } from 'node:crypto'
import { Writable } from 'node:stream'
import { MongoClient } from 'mongodb'
import { pino } from 'pino'
import t from 'tap'
import { buildServer } from '../../api/server.js'
import { parseEncryptionKeys, SecretBox } from '../../api/crypto/secret-box.js'
import { startMongo } from '../harness/mongo.js'
import { startS3 } from '../harness/s3.js'

const SECRET = 'kWz8-secret-access-key-never-logged-0123456789'
const SESSION = 'session-token-never-logged-abcdef'

t.test('destination credentials survive key rotation and never reach a log line', async (t) => {
  const [mongo, s3] = await Promise.all([startMongo(t), startS3(t)])
  const customerBucket = await s3.createBucket('rotation-bucket')
  const client = await MongoClient.connect(mongo.url)
  t.teardown(() => client.close())
  const db = client.db(mongo.dbName)
  const managed = s3.client()
  t.teardown(() => managed.destroy())
  const logLines: string[] = []
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      logLines.push(chunk.toString())
      done()
    },
  })
  const k1 = `k1:${randomBytes(32).toString('base64')}`
  const k2 = `k2:${randomBytes(32).toString('base64')}`
  // Two API processes on one database: before and during a rotation from k1 to k2 (ENCRYPTION_KEYS="k2:…,k1:…").
  const app = async (keys: string) => {
    const built = await buildServer({
      logger: pino({ level: 'trace' }, sink),
      app: {
        rateLimits: { free: 0, trial: 0, growth: 0, business: 0 },
        db,
        secretBox: new SecretBox(parseEncryptionKeys(keys)),
        s3: managed,
        s3Bucket: s3.bucket,
        allowPrivateNetworks: true,
      },
    })
    t.teardown(() => built.close())
    return built
  }
  const before = await app(k1)
  const account = await before.accounts.createAccount('business')
  const call = (instance: typeof before, method: 'POST' | 'PATCH' | 'GET', url: string, payload?: object) =>
    instance.inject({ method, url: `/api/v1/storage-destinations${url}`, headers: { 'x-api-key': account.api_key }, ...(payload ? { payload } : {}) })

  const created = await call(before, 'POST', '', {
    name: 'rotating',
    endpoint_url: s3.endpoint.replace('127.0.0.1', 'localhost'),
    region: s3.region,
    bucket: customerBucket,
    path_style: true,
    credentials: { access_key_id: s3.accessKeyId, secret_access_key: s3.secretAccessKey },
  })
  t.equal(created.statusCode, 201)
  const id = created.json().storage_destination_id
  const sealedKid = async () => (await db.collection('storage_destinations').findOne({ _id: id }))?.credentials_sealed.kid
  t.equal(await sealedKid(), 'k1')

  t.test('after rotating to k2 (k1 still listed) the destination still works', async (t) => {
    const during = await app(`${k2},${k1}`)
    t.same((await call(during, 'POST', `/${id}/test`)).json(), { ok: true })
    t.equal(await sealedKid(), 'k1', 'reading does not re-seal')

    t.test('a credentials PATCH re-seals them with k2, so k1 can then be dropped', async (t) => {
      const patched = await call(during, 'PATCH', `/${id}`, {
        credentials: { access_key_id: s3.accessKeyId, secret_access_key: s3.secretAccessKey },
      })
      t.equal(patched.statusCode, 200)
      t.equal(await sealedKid(), 'k2')
      const after = await app(k2)
      t.same((await call(after, 'POST', `/${id}/test`)).json(), { ok: true })
    })
  })

  t.test('a failed connection test logs its cause without the secret', async (t) => {
    const wrong = await call(before, 'POST', '', {
      name: 'wrong',
      endpoint_url: s3.endpoint.replace('127.0.0.1', 'localhost'),
      region: s3.region,
      bucket: customerBucket,
      path_style: true,
      credentials: { access_key_id: s3.accessKeyId, secret_access_key: SECRET, session_token: SESSION },
    })
    t.equal(wrong.statusCode, 201)
    const tested = await call(before, 'POST', `/${wrong.json().storage_destination_id}/test`)
    t.equal(tested.json().ok, false)
    t.ok(logLines.some((line) => line.includes('storage destination connection test failed')), 'the failure was logged')
  })

  t.test('no log line holds a secret', async (t) => {
    t.ok(logLines.length > 10, 'the log was captured')
    for (const secret of [SECRET, SESSION, s3.secretAccessKey]) {
      t.notOk(logLines.some((line) => line.includes(secret)), 'no secret in the log')
    }
  })
})
