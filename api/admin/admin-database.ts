import { MongoClient } from 'mongodb'
import type { Config } from '../config.js'
import { localMongoDir, runningLocalMongoUrl, startLocalMongo } from '../local/embedded-mongo.js'
import { localEncryptionKeys } from '../local/local-services.js'

/** The database the admin CLI works on, and how to let it go. */
export interface AdminDatabase {
  client: MongoClient
  encryptionKeys: string
  close(): Promise<void>
}

const PING_TIMEOUT_MS = 2_000

/** A client for `url` if a server answers there within PING_TIMEOUT_MS, else null. */
async function connectIfAnswering(url: string): Promise<MongoClient | null> {
  const client = new MongoClient(url, { serverSelectionTimeoutMS: PING_TIMEOUT_MS, appName: 'ffkube-admin' })
  try {
    await client.connect()
    await client.db('admin').command({ ping: 1 })
    return client
  } catch {
    await client.close().catch(() => undefined)
    return null
  }
}

/**
 * The database `npm start` uses: MONGODB_URL when set; otherwise the embedded
 * store of a running `npm start` (it writes its URI under the data dir); otherwise a
 * store started on the same data for as long as the command runs.
 * Encryption keys resolve as local mode resolves them, so keys sealed here open there.
 */
export async function openAdminDatabase(config: Config): Promise<AdminDatabase> {
  const encryptionKeys = config.encryptionKeys ?? (await localEncryptionKeys(config.dataDir))
  if (config.mongodbUrl) {
    const client = await MongoClient.connect(config.mongodbUrl, { serverSelectionTimeoutMS: 5_000, appName: 'ffkube-admin' })
    return { client, encryptionKeys, close: () => client.close() }
  }
  const dir = localMongoDir(config.dataDir)
  const runningUrl = await runningLocalMongoUrl(dir)
  const running = runningUrl ? await connectIfAnswering(runningUrl) : null
  if (running) return { client: running, encryptionKeys, close: () => running.close() }
  const local = await startLocalMongo(dir)
  try {
    const client = await MongoClient.connect(local.url, { serverSelectionTimeoutMS: 5_000, appName: 'ffkube-admin' })
    return {
      client,
      encryptionKeys,
      close: async () => {
        await client.close()
        await local.server.stop()
      },
    }
  } catch (err) {
    await local.server.stop()
    throw err
  }
}
