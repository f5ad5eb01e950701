import { CreateBucketCommand, HeadBucketCommand, S3Client } from '@aws-sdk/client-s3'
import { MongoClient, type Db } from 'mongodb'
import { connect, type NatsConnection } from 'nats'
import type { NatsCredentials } from '../contracts/nats-authorization.js'
import type { S3Config } from './config.js'
import type { ReadinessProbe } from './health/readiness.js'

/** The clients of the three services every API-side process talks to. */
export interface Connections {
  mongo: MongoClient
  db: Db
  nats: NatsConnection
  s3: S3Client
  s3Bucket: string
  /** A readiness probe per service, for each role to pick the ones it depends on. */
  probes: { mongodb: ReadinessProbe; nats: ReadinessProbe; storage: ReadinessProbe }
  close(): Promise<void>
}

function s3Client(config: S3Config): S3Client {
  return new S3Client({
    endpoint: config.endpoint,
    region: config.region,
    forcePathStyle: config.forcePathStyle,
    ...(config.accessKeyId && config.secretAccessKey
      ? { credentials: { accessKeyId: config.accessKeyId, secretAccessKey: config.secretAccessKey } }
      : {}),
  })
}

/** Creates the managed bucket unless it exists; only local mode owns its bucket. */
export async function ensureBucket(s3: S3Client, bucket: string): Promise<void> {
  try {
    await s3.send(new HeadBucketCommand({ Bucket: bucket }))
  } catch {
    await s3.send(new CreateBucketCommand({ Bucket: bucket }))
  }
}

/** Connects to MongoDB, NATS and S3, and names a readiness probe for each. */
export async function openConnections(options: {
  mongodbUrl: string
  mongodbDatabase: string
  natsUrl: string
  natsCredentials?: NatsCredentials | undefined
  s3: S3Config
  name: string
}): Promise<Connections> {
  const mongo = await MongoClient.connect(options.mongodbUrl, { appName: options.name, serverSelectionTimeoutMS: 5_000 })
  let nats: NatsConnection
  try {
    // Reconnect forever: an outage must pause the service, not end it.
    nats = await connect({ servers: options.natsUrl, ...options.natsCredentials, name: options.name, maxReconnectAttempts: -1 })
  } catch (err) {
    await mongo.close()
    throw err
  }
  const s3 = s3Client(options.s3)
  const db = mongo.db(options.mongodbDatabase)
  const probes = {
    mongodb: { name: 'mongodb', check: async () => void (await db.command({ ping: 1 })) },
    nats: { name: 'nats', check: async () => void (await nats.rtt()) },
    storage: { name: 'storage', check: async () => void (await s3.send(new HeadBucketCommand({ Bucket: options.s3.bucket }))) },
  }
  return {
    mongo,
    db,
    nats,
    s3,
    s3Bucket: options.s3.bucket,
    probes,
    close: async () => {
      s3.destroy()
      await nats.drain().catch(() => nats.close())
      await mongo.close()
    },
  }
}
