/**
 * Phase 3 (upload): writes outputs to S3-compatible storage, managed storage
 * or a customer's bucket (a storage destination). The only phase that holds
 * storage credentials: they are read when the upload starts and handed to
 * nothing else (ffmpeg and yt-dlp run with PATH only). Loaded lazily, as
 * the AWS SDK takes long to load (upload-phase.ts).
 */
import { createReadStream } from 'node:fs'
import { readFile, stat } from 'node:fs/promises'
import { Agent as HttpAgent } from 'node:http'
import { Agent as HttpsAgent } from 'node:https'
import { join } from 'node:path'
import type { Readable } from 'node:stream'
import { DeleteObjectCommand, PutObjectCommand, S3Client, S3ServiceException } from '@aws-sdk/client-s3'
import { Upload } from '@aws-sdk/lib-storage'
import { objectKey } from '../../../contracts/object-keys.js'
import { pinnedLookup, systemResolver, UrlGuardError } from '../../../contracts/url-guard-fetch.js'
import { RunnerFailure } from '../failure.js'
import { addressOf, leanPut, S3RequestError, type LeanAgents, type LeanPut } from './lean-put.js'
import { leanRequests } from './lean-requests.js'
import type { UploadTarget } from './upload-target.js'

export interface FileToUpload {
  alias: string
  /** Its name in the command's folder: a filename, or a path relative to a multi-file output's folder. */
  filename: string
  /** Relative to the work dir. */
  path: string
  contentType: string | null
}

/**
 * Parts of a multipart upload; files up to one part go up in a single PUT
 * streamed from disk. lib-storage holds each part in memory, and the runner
 * sits beside ffmpeg: PARTS_IN_FLIGHT × PART_SIZE_BYTES bounds what an upload
 * adds to its memory, whatever the file's size.
 */
export const PART_SIZE_BYTES = 8 * 1024 * 1024
const PARTS_IN_FLIGHT = 2

/**
 * The read size of a single PUT streamed from disk: 1 MiB instead of the
 * 64 KiB default, so an 8 MiB output is 8 reads and socket writes, not 128;
 * each chunk costs the runner a Buffer, stream callbacks and (in lite mode)
 * interpreted JS, and that was most of moving the bytes.
 */
const SINGLE_PUT_CHUNK_BYTES = 1024 * 1024

/**
 * Files up to this size are read whole and sent as bytes with a CRC32
 * (putBytes): in the runner's lite mode a PUT streamed from disk cost about
 * twice the CPU of the same PUT from memory (bench/object-put-cost.ts), and
 * an HLS segment is a few hundred kB. UPLOADS_IN_FLIGHT of them at once is
 * what this adds to the runner's memory at most.
 */
export const READ_WHOLE_MAX_BYTES = 1024 * 1024

/**
 * Files stored at once. A multi-file output is hundreds of small objects, each
 * mostly a request's round trip: one S3 client (the SDK's agent keeps
 * connections alive, 50 sockets at most) with this many PUTs in flight
 * (measured in bench/multi-file.ts). A single file is one PUT, as before.
 */
export const UPLOADS_IN_FLIGHT = 12


/**
 * Writes one object, multipart when it is larger than a part. On failure
 * lib-storage aborts the multipart upload (leavePartsOnError: false), so no
 * object and no orphaned parts are left behind.
 */
export async function putObject(
  client: S3Client,
  object: { bucket: string; key: string; body: Readable; contentType: string | null },
  partSize = PART_SIZE_BYTES,
): Promise<void> {
  await new Upload({
    client,
    partSize,
    queueSize: PARTS_IN_FLIGHT,
    leavePartsOnError: false,
    params: { Bucket: object.bucket, Key: object.key, Body: object.body, ...(object.contentType ? { ContentType: object.contentType } : {}) },
  }).done()
}

/**
 * One PUT of bytes in memory, with a CRC32 the store checks: the SDK sends it
 * in `x-amz-checksum-crc32` whatever its requestChecksumCalculation, and the
 * body is then signed unsigned (lean-requests.ts).
 */
async function putBuffer(client: S3Client, object: { bucket: string; key: string; body: Buffer; contentType: string | null }): Promise<void> {
  const contentType = object.contentType ? { ContentType: object.contentType } : {}
  await client.send(new PutObjectCommand({ Bucket: object.bucket, Key: object.key, Body: object.body, ContentLength: object.body.length, ChecksumAlgorithm: 'CRC32', ...contentType }))
}

/** Bytes in memory, one PUT: the lean PUT when the store has one, else the SDK's. */
function putBytesWith(client: S3Client, lean: LeanPut | null, object: { bucket: string; key: string; body: Buffer; contentType: string | null }): Promise<void> {
  return lean ? lean.put(object.key, object.body, object.contentType) : putBuffer(client, object)
}

/** Writes one file: read whole when small, a single PUT streamed from disk when it fits in a part, else putObject's multipart upload. */
async function putFile(client: S3Client, lean: LeanPut | null, file: { bucket: string; key: string; path: string; contentType: string | null }): Promise<void> {
  const { size } = await stat(file.path)
  const contentType = file.contentType ? { ContentType: file.contentType } : {}
  if (size <= READ_WHOLE_MAX_BYTES) {
    // Read once and sent as read: the file's length cannot change between the stat and the PUT's Content-Length.
    const body = await readFile(file.path)
    await putBytesWith(client, lean, { bucket: file.bucket, key: file.key, body, contentType: file.contentType })
    return
  }
  if (size > PART_SIZE_BYTES) {
    await putObject(client, { bucket: file.bucket, key: file.key, body: createReadStream(file.path), contentType: file.contentType })
    return
  }
  await client.send(new PutObjectCommand({ Bucket: file.bucket, Key: file.key, Body: createReadStream(file.path, { highWaterMark: SINGLE_PUT_CHUNK_BYTES }), ContentLength: size, ...contentType }))
}

/**
 * A customer bucket's failure, told without the SDK's text: only the S3 error
 * code, or what kind of network failure it was. Credentials never appear.
 */
function destinationFailureReason(error: unknown): string {
  if (error instanceof UrlGuardError) {
    return error.code === 'FORBIDDEN_ADDRESS' ? 'the endpoint resolves to a private or reserved address' : 'the endpoint host name does not resolve'
  }
  if (error instanceof S3ServiceException) return error.name
  if (error instanceof S3RequestError) return error.code
  if (error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError')) return 'the endpoint did not answer in time'
  return 'the endpoint could not be reached'
}

function failure(target: UploadTarget, what: string, error: unknown): RunnerFailure {
  if (target.location === 'EXTERNAL') return new RunnerFailure('DESTINATION_UPLOAD_FAILED', `${what} to the storage destination failed: ${destinationFailureReason(error)}`)
  // Managed storage: the SDK's message names the bucket and the S3 error code, never the credentials.
  return new RunnerFailure('UPLOAD_FAILED', `${what} failed: ${error instanceof Error ? error.message : String(error)}`)
}

/** The SDK's own default for its kept-alive agents. */
const SOCKETS_PER_AGENT = 50

function clientFor(target: UploadTarget, credentials: Awaited<ReturnType<UploadTarget['credentials']>>): { client: S3Client; agents: LeanAgents; close: () => void } {
  // One pair of kept-alive agents for the SDK's requests and the lean PUTs alike; a customer's endpoint goes through the guard.
  const lookup = target.guard ? { lookup: pinnedLookup(systemResolver, { allowPrivateNetworks: target.guard.allowPrivateNetworks }) } : {}
  const agents = { httpAgent: new HttpAgent({ ...lookup, keepAlive: true, maxSockets: SOCKETS_PER_AGENT }), httpsAgent: new HttpsAgent({ ...lookup, keepAlive: true, maxSockets: SOCKETS_PER_AGENT }) }
  const client = new S3Client({
    // No trailing CRC32 on streamed bodies (the SDK's default since 3.729): S3-compatible stores that predate
    // aws-chunked trailers refuse them, and TCP (TLS for https) already guards the bytes in flight.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    region: target.region,
    forcePathStyle: target.forcePathStyle,
    ...(target.endpoint ? { endpoint: target.endpoint } : {}),
    ...(credentials ? { credentials } : {}),
    requestHandler: agents,
  })
  leanRequests(client)
  return {
    client,
    agents,
    close: () => {
      client.destroy()
      agents.httpAgent.destroy()
      agents.httpsAgent.destroy()
    },
  }
}

/**
 * The store's lean PUT (lean-put.ts), when it can have one: credentials in
 * hand (not the SDK's default chain) and a bucket the SDK signs with plain
 * SigV4. Otherwise null, and every PUT goes through the SDK.
 */
async function leanPutFor(client: S3Client, agents: LeanAgents, bucket: string, credentials: Awaited<ReturnType<UploadTarget['credentials']>>): Promise<LeanPut | null> {
  if (!credentials) return null
  const address = await addressOf(client, bucket)
  return address ? leanPut(address, credentials, agents) : null
}

/** One S3 client for one command's objects: a put, a best-effort delete, and the key of a name. */
export interface ObjectStore {
  keyOf(filename: string): string
  /** Stores one file; throws the RunnerFailure the target's kind names. */
  put(workDir: string, file: FileToUpload): Promise<void>
  /** Stores bytes already read as `file`'s object, in one PUT with a CRC32 the store checks. */
  putBytes(file: FileToUpload, body: Buffer): Promise<void>
  /** Deletes each key on its own, ignoring failures: one that fails does not stop the others. */
  delete(keys: readonly string[]): Promise<void>
  close(): void
}

/** Reads the target's credentials and opens its client. */
export async function openStore(target: UploadTarget, commandId: string): Promise<ObjectStore> {
  let credentials
  try {
    credentials = await target.credentials()
  } catch (error) {
    // Our own messages (unset variable, malformed file) never quote the file's content.
    const status = target.location === 'EXTERNAL' ? 'DESTINATION_UPLOAD_FAILED' : 'UPLOAD_FAILED'
    throw new RunnerFailure(status, `storage credentials are unreadable: ${error instanceof Error ? error.message : String(error)}`)
  }
  const { client, agents, close } = clientFor(target, credentials)
  // A target the SDK cannot address fails the same way on the SDK's own PUT, which then reports it.
  const lean = await leanPutFor(client, agents, target.bucket, credentials).catch(() => null)
  const keyOf = (filename: string) => objectKey(target.prefix, commandId, filename)
  return {
    keyOf,
    put: async (workDir, file) => {
      try {
        await putFile(client, lean, { bucket: target.bucket, key: keyOf(file.filename), path: join(workDir, file.path), contentType: file.contentType })
      } catch (error) {
        throw failure(target, `upload of ${file.filename}`, error)
      }
    },
    putBytes: async (file, body) => {
      try {
        await putBytesWith(client, lean, { bucket: target.bucket, key: keyOf(file.filename), body, contentType: file.contentType })
      } catch (error) {
        throw failure(target, `upload of ${file.filename}`, error)
      }
    },
    delete: (keys) => inParallel(keys, UPLOADS_IN_FLIGHT, (key) => client.send(new DeleteObjectCommand({ Bucket: target.bucket, Key: key })).then(() => undefined, () => undefined)),
    close,
  }
}

/** What was stored while ffmpeg ran (pre-uploads.ts), for the final upload to complete. */
export interface EarlierUploads {
  /** The store they used, left open for the final upload. */
  store(): Promise<ObjectStore>
  /** Waits for those in flight; returns the files still to store and the keys stored for files that are not among them. */
  settle(files: readonly FileToUpload[]): Promise<{ todo: FileToUpload[]; stale: string[] }>
  /** Every key they stored or tried to. */
  keys(): string[]
}

/**
 * Uploads every file, UPLOADS_IN_FLIGHT at a time; returns filename → object
 * key. If one fails, no more are started, and what this call (and `earlier`)
 * stored is deleted (best effort), so a failed command leaves no partial output.
 * With `earlier`, files stored while ffmpeg ran and unchanged since are not
 * sent again, and objects of files gone since are deleted.
 */
export async function uploadOutputs(
  target: UploadTarget,
  commandId: string,
  workDir: string,
  files: readonly FileToUpload[],
  earlier: EarlierUploads | null = null,
): Promise<Record<string, string>> {
  const store = earlier ? await earlier.store() : await openStore(target, commandId)
  const stored: string[] = []
  try {
    const { todo, stale } = earlier ? await earlier.settle(files) : { todo: files, stale: [] }
    await inParallel(todo, UPLOADS_IN_FLIGHT, async (file) => {
      await store.put(workDir, file)
      stored.push(store.keyOf(file.filename))
    })
    await store.delete(stale)
    return Object.fromEntries(files.map((file) => [file.filename, store.keyOf(file.filename)]))
  } catch (error) {
    await store.delete([...stored, ...(earlier?.keys() ?? [])])
    throw error
  } finally {
    if (!earlier) store.close()
  }
}

/**
 * Runs `work` on every item, at most `limit` at once; after the first
 * failure starts no more, lets those in flight end, and throws that failure.
 */
async function inParallel<T>(items: readonly T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0
  let failed: { error: unknown } | null = null
  const worker = async (): Promise<void> => {
    while (failed === null && next < items.length) {
      const item = items[next++] as T
      try {
        await work(item)
      } catch (error) {
        failed ??= { error }
      }
    }
  }
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker))
  if (failed !== null) throw (failed as { error: unknown }).error
}
