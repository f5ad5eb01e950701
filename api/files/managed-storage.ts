import { createWriteStream } from 'node:fs'
import { rm } from 'node:fs/promises'
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { DeleteObjectCommand, DeleteObjectsCommand, GetObjectCommand, type S3Client } from '@aws-sdk/client-s3'
import { Upload } from '@aws-sdk/lib-storage'

/** Object keys in the managed bucket: one folder per account, one per file. */
export function uploadObjectKey(accountId: string, fileId: string, filename: string): string {
  return `uploads/${accountId}/${fileId}/${filename}`
}

/** S3's most keys in one DeleteObjects request. */
const DELETE_BATCH = 1000

/** The managed bucket: where uploads and managed outputs live. */
export class ManagedStorage {
  constructor(
    readonly s3: S3Client,
    readonly bucket: string,
  ) {}

  /**
   * Streams `body` to `key` with multipart parts of 8 MiB, two in flight, so
   * an upload of any size holds at most ~16 MiB in memory. Returns the bytes written.
   */
  async upload(key: string, body: Readable, contentType: string | null): Promise<number> {
    let bytes = 0
    body.on('data', (chunk: Buffer) => {
      bytes += chunk.length
    })
    const upload = new Upload({
      client: this.s3,
      params: { Bucket: this.bucket, Key: key, Body: body, ...(contentType ? { ContentType: contentType } : {}) },
      partSize: 8 * 1024 * 1024,
      queueSize: 2,
      leavePartsOnError: false,
    })
    await upload.done()
    return bytes
  }

  /** Copies an object into the local file `path` through the S3 API; refuses one over `maxBytes`. Returns the bytes read. */
  async download(key: string, path: string, maxBytes: number): Promise<number> {
    const object = await this.s3.send(new GetObjectCommand({ Bucket: this.bucket, Key: key }))
    const body = object.Body
    if (!(body instanceof Readable)) throw new Error(`the object ${key} has no readable body`)
    if ((object.ContentLength ?? 0) > maxBytes) {
      body.destroy()
      throw new Error(`the object is larger than the limit of ${maxBytes} bytes`)
    }
    try {
      await pipeline(body, createWriteStream(path))
    } catch (err) {
      await rm(path, { force: true })
      throw err
    }
    return object.ContentLength ?? 0
  }

  /** Deletes an object; deleting one that is gone already succeeds, so a retried delete is safe. */
  async delete(key: string): Promise<void> {
    await this.s3.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: key }))
  }

  /**
   * Deletes objects, up to S3's 1,000 per request; keys already gone count as
   * deleted, so a retried delete is safe. Throws naming the first key S3
   * could not delete.
   */
  async deleteAll(keys: readonly string[]): Promise<void> {
    if (keys.length === 1) return this.delete(keys[0] as string)
    for (let start = 0; start < keys.length; start += DELETE_BATCH) {
      const batch = keys.slice(start, start + DELETE_BATCH)
      const result = await this.s3.send(new DeleteObjectsCommand({ Bucket: this.bucket, Delete: { Objects: batch.map((Key) => ({ Key })), Quiet: true } }))
      const failed = result.Errors?.[0]
      if (failed) throw new Error(`the object ${failed.Key ?? '?'} could not be deleted: ${failed.Code ?? ''} ${failed.Message ?? ''}`.trim())
    }
  }
}
