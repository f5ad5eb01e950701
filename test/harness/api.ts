import { randomBytes } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import { MongoClient, type Db } from 'mongodb'
import type { Plan } from '../../api/accounts/plans.js'
import { buildApp } from '../../api/app.js'
import { SecretBox } from '../../api/crypto/secret-box.js'
import { createLogger } from '../../api/logger.js'
import { startMongo } from './mongo.js'
import type { Teardown } from './scratch.js'

/** The API app built on a real MongoDB-wire server, ready for `app.inject()`. */
export interface TestApi {
  app: FastifyInstance
  db: Db
  secretBox: SecretBox
  /** Creates an account on `plan` and returns its id and a working API key. */
  createAccount(plan?: Plan): Promise<{ account_id: string; api_key: string; key_id: string }>
}

export async function startApi(t: Teardown): Promise<TestApi> {
  const mongo = await startMongo(t)
  const client = await MongoClient.connect(mongo.url)
  t.teardown(() => client.close())
  const db = client.db(mongo.dbName)
  const secretBox = new SecretBox([['test', randomBytes(32)]])
  const app = await buildApp({ logger: createLogger('test', 'silent'), probes: [], db, secretBox })
  t.teardown(() => app.close())
  return { app, db, secretBox, createAccount: (plan = 'business') => app.accounts.createAccount(plan) }
}
