import { randomBytes } from 'node:crypto'
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3'
import { startVersitygw } from '../../api/local/versitygw.js'
import { startMinio } from './minio.js'
import type { ListenOptions } from './mongo.js'
import { scratchDir, type Teardown } from './scratch.js'

/** An S3-compatible server with one empty bucket, and credentials for it. */
export interface TestS3 {
  endpoint: string
  region: string
  bucket: string
  accessKeyId: string
  secretAccessKey: string
  forcePathStyle: true
  /** A client with the SDK's defaults (checksums, aws-chunked uploads) left on. */
  client(): S3Client
  /** Another bucket on the same server, e.g. a customer's. */
  createBucket(name?: string): Promise<string>
}

/** The fields of a POST /storage-destinations body that point at `bucket` of `server` (a customer's own S3), reached by name as a customer's endpoint would be. */
export function destinationFields(server: TestS3, bucket: string) {
  return {
    endpoint_url: server.endpoint.replace('127.0.0.1', 'localhost'),
    region: server.region,
    bucket,
    path_style: true,
    credentials: { access_key_id: server.accessKeyId, secret_access_key: server.secretAccessKey },
  }
}

/**
 * Which S3 server: `versitygw` is the managed store, the one `npm start` runs
 * (the default); `minio` plays a customer's own server, so that a storage
 * destination test talks to a second, different implementation.
 */
export type S3ServerKind = 'versitygw' | 'minio'

export interface S3Options extends ListenOptions {
  server?: S3ServerKind
}

const starters = { versitygw: startVersitygw, minio: startMinio }

/** Starts an S3 server on a free loopback port (or on `host`) with fresh credentials and one bucket. */
export async function startS3(t: Teardown, options: S3Options = {}): Promise<TestS3> {
  const accessKeyId = `test${randomBytes(6).toString('hex')}`
  const secretAccessKey = randomBytes(24).toString('hex')
  const start = starters[options.server ?? 'versitygw']
  const local = await start(await scratchDir(t, 'ffkube-s3-'), { accessKeyId, secretAccessKey }, options.host)
  t.teardown(() => local.server.stop())
  const { endpoint } = local
  const region = 'us-east-1'
  const client = () => new S3Client({ endpoint, region, forcePathStyle: true, credentials: { accessKeyId, secretAccessKey } })
  const createBucket = async (name = `bucket-${randomBytes(4).toString('hex')}`) => {
    const s3 = client()
    await s3.send(new CreateBucketCommand({ Bucket: name }))
    s3.destroy()
    return name
  }
  const bucket = await createBucket('ffkube-test')
  return { endpoint, region, bucket, accessKeyId, secretAccessKey, forcePathStyle: true, client, createBucket }
}
