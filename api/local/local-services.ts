import { randomBytes } from 'node:crypto'
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { Config, S3Config } from '../config.js'
import type { Logger } from '../logger.js'
import type { ChildServer } from './child-server.js'
import { localMongoDir, startLocalMongo } from './embedded-mongo.js'
import { startNatsServer } from './nats-server.js'
import { type S3RootCredentials, startVersitygw } from './versitygw.js'

/** The config with every unset service URL filled in by a server started here. */
export interface LocalServices {
  config: Config
  /** Stops what was started, in reverse order. */
  stop(): Promise<void>
}

/** The local S3 server's root credentials, generated once and kept beside its data. */
async function localS3Credentials(dir: string): Promise<S3RootCredentials> {
  const file = join(dir, 'credentials.json')
  try {
    return JSON.parse(await readFile(file, 'utf8')) as S3RootCredentials
  } catch {
    const credentials = { accessKeyId: `ffkube${randomBytes(6).toString('hex')}`, secretAccessKey: randomBytes(24).toString('hex') }
    await mkdir(dir, { recursive: true, mode: 0o700 })
    await writeFile(file, JSON.stringify(credentials), { mode: 0o600 })
    return credentials
  }
}

/** Local mode's encryption key, generated once and kept beside the data it protects. */
export async function localEncryptionKeys(dataDir: string): Promise<string> {
  const file = join(dataDir, 'encryption-keys')
  try {
    return (await readFile(file, 'utf8')).trim()
  } catch {
    const keys = `local1:${randomBytes(32).toString('base64')}`
    await mkdir(dataDir, { recursive: true, mode: 0o700 })
    await writeFile(file, keys, { mode: 0o600 })
    return keys
  }
}

/**
 * For local mode (`npm start`): starts the embedded MongoDB-wire server, nats-server and versitygw (S3) on
 * loopback for whichever of MONGODB_URL, NATS_URL and S3_ENDPOINT is unset,
 * keeping their data under the config's dataDir; and an encryption key when
 * ENCRYPTION_KEYS is unset.
 */
export async function startLocalServices(config: Config, logger: Logger): Promise<LocalServices> {
  const started: ChildServer[] = []
  const stop = async () => {
    for (const server of started.reverse()) await server.stop()
  }
  try {
    let { mongodbUrl, natsUrl, s3 } = config
    if (!mongodbUrl) {
      const mongo = await startLocalMongo(localMongoDir(config.dataDir))
      started.push(mongo.server)
      mongodbUrl = mongo.url
      logger.info({ url: mongodbUrl }, 'started the local MongoDB-wire server')
    }
    if (!natsUrl) {
      const nats = await startNatsServer(join(config.dataDir, 'nats'))
      started.push(nats.server)
      natsUrl = nats.url
      logger.info({ url: natsUrl }, 'started local nats-server')
    }
    if (!s3.endpoint) {
      const credentials = await localS3Credentials(join(config.dataDir, 's3-credentials'))
      const local = await startVersitygw(join(config.dataDir, 's3'), credentials)
      started.push(local.server)
      s3 = { ...s3, endpoint: local.endpoint, forcePathStyle: true, ...credentials } satisfies S3Config
      logger.info({ endpoint: local.endpoint }, 'started the local S3 server (versitygw)')
    }
    const encryptionKeys = config.encryptionKeys ?? (await localEncryptionKeys(config.dataDir))
    return { config: { ...config, mongodbUrl, natsUrl, s3, encryptionKeys }, stop }
  } catch (err) {
    await stop()
    throw err
  }
}
