import { randomBytes } from 'node:crypto'
import { MongoClient } from 'mongodb'
import { startLocalMongo, type LocalMongo } from '../../api/local/embedded-mongo.js'
import { scratchDir, type Teardown } from './scratch.js'

/** A MongoDB-wire server and a database name no other test uses. */
export interface TestMongo {
  url: string
  dbName: string
  /** Stops the server and starts it again on the same port and data; undefined when external. */
  restart?: () => Promise<void>
}

/** Where a test's server listens: `host` (e.g. a cluster's node IP) always starts a local server there. */
export interface ListenOptions {
  host?: string
}

/**
 * A MongoDB for one test: the server at MONGODB_URL when set (so the suite
 * also runs against real MongoDB), otherwise a fresh FerretDB on a free port.
 */
export async function startMongo(t: Teardown, options: ListenOptions = {}): Promise<TestMongo> {
  const dbName = `ffkube_test_${randomBytes(6).toString('hex')}`
  const external = options.host ? undefined : process.env.MONGODB_URL
  if (external) {
    t.teardown(async () => {
      const client = await MongoClient.connect(external)
      await client.db(dbName).dropDatabase()
      await client.close()
    })
    return { url: external, dbName }
  }
  const dir = await scratchDir(t, 'ffkube-mongo-')
  let local: LocalMongo = await startLocalMongo(dir, undefined, options.host)
  t.teardown(() => local.server.stop())
  const port = Number(new URL(local.url).port)
  return {
    url: local.url,
    dbName,
    restart: async () => {
      await local.server.stop()
      local = await startLocalMongo(dir, undefined, options.host, port)
    },
  }
}
