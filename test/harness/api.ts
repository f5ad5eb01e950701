import { randomBytes } from 'node:crypto'
import type { S3Client } from '@aws-sdk/client-s3'
import type { FastifyInstance } from 'fastify'
import { MongoClient, type Db, type MongoClientOptions } from 'mongodb'
import type { Plan } from '../../api/accounts/plans.js'
import type { AppOptions } from '../../api/app.js'
import { SecretBox } from '../../api/crypto/secret-box.js'
import { createLogger } from '../../api/logger.js'
import { buildServer } from '../../api/server.js'
import { startMongo } from './mongo.js'
import { startS3 } from './s3.js'
import type { Teardown } from './scratch.js'

/** The API served as api/server.ts serves it, on a real MongoDB-wire server, ready for `app.inject()`. */
export interface TestApi {
  app: FastifyInstance
  db: Db
  /** Where `db` lives, for a child process (the admin CLI) to reach the same database. */
  mongo: { url: string; dbName: string }
  secretBox: SecretBox
  /** The managed bucket: a real versitygw unless the test passed its own `s3`. */
  s3: S3Client
  s3Bucket: string
  /** Creates an account on `plan` and returns its id and a working API key. */
  createAccount(plan?: Plan): Promise<{ account_id: string; api_key: string; key_id: string }>
}

/**
 * Optional app dependencies a test sets itself, e.g. `{ clock, rateLimits,
 * allowPrivateNetworks }`. Rate limits default to unlimited here, so only tests
 * about rate limiting meet them.
 */
export type ApiOverrides = Partial<Omit<AppOptions, 'db' | 'secretBox'>>

const UNLIMITED = { free: 0, trial: 0, growth: 0, business: 0 }

/** `clientOptions` go to the app's MongoClient, e.g. `{ monitorCommands: true }` to see its queries. */
export async function startApi(t: Teardown, overrides: ApiOverrides = {}, clientOptions: MongoClientOptions = {}): Promise<TestApi & { client: MongoClient }> {
  const mongo = await startMongo(t)
  const client = await MongoClient.connect(mongo.url, clientOptions)
  t.teardown(() => client.close())
  const db = client.db(mongo.dbName)
  const secretBox = new SecretBox([['test', randomBytes(32)]])
  let storage = overrides.s3 && overrides.s3Bucket ? { s3: overrides.s3, s3Bucket: overrides.s3Bucket } : undefined
  if (!storage) {
    const s3 = await startS3(t)
    const client = s3.client()
    t.teardown(() => client.destroy())
    storage = { s3: client, s3Bucket: s3.bucket }
  }
  const app = await buildServer({ logger: createLogger('test', 'silent'), app: { rateLimits: UNLIMITED, ...overrides, ...storage, db, secretBox } })
  t.teardown(() => app.close())
  return { app, db, client, mongo, secretBox, ...storage, createAccount: (plan = 'business') => app.accounts.createAccount(plan) }
}
