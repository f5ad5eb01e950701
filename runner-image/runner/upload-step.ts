/**
 * Step 4: uploads outputs to S3-compatible storage. The only step that holds
 * storage credentials: they are read from the environment when it runs and
 * handed to nothing else (ffmpeg and yt-dlp run with PATH only).
 */
import { createReadStream } from 'node:fs'
import { join } from 'node:path'
import { S3Client } from '@aws-sdk/client-s3'
import { Upload } from '@aws-sdk/lib-storage'
import { RunnerFailure } from './failure.js'

/** Where outputs go: managed storage now, a customer's bucket (EXTERNAL) with the storage-destination issue. */
export interface UploadTarget {
  location: 'INTERNAL' | 'EXTERNAL'
  endpoint: string | null
  region: string
  bucket: string
  prefix: string
  forcePathStyle: boolean
  /** Called by the upload step when it starts, so credentials are read only then. */
  credentials: () => Promise<{ accessKeyId: string; secretAccessKey: string; sessionToken?: string } | null>
}

export interface FileToUpload {
  alias: string
  filename: string
  /** Relative to the work dir. */
  path: string
  contentType: string | null
}

/** `{prefix}/{command_id}/{filename}`, the spec's layout; no leading slash when the prefix is empty. */
export function objectKey(prefix: string, commandId: string, filename: string): string {
  const trimmed = prefix.replace(/^\/+|\/+$/g, '')
  return trimmed === '' ? `${commandId}/${filename}` : `${trimmed}/${commandId}/${filename}`
}

/** Uploads every file; returns alias → object key. */
export async function uploadOutputs(
  target: UploadTarget,
  commandId: string,
  workDir: string,
  files: readonly FileToUpload[],
): Promise<Record<string, string>> {
  let credentials
  try {
    credentials = await target.credentials()
  } catch (error) {
    throw new RunnerFailure('UPLOAD_FAILED', `storage credentials are unreadable: ${error instanceof Error ? error.message : String(error)}`)
  }
  const client = new S3Client({
    region: target.region,
    forcePathStyle: target.forcePathStyle,
    ...(target.endpoint ? { endpoint: target.endpoint } : {}),
    ...(credentials ? { credentials } : {}),
  })
  try {
    const keys: Record<string, string> = {}
    for (const file of files) {
      const key = objectKey(target.prefix, commandId, file.filename)
      try {
        await new Upload({
          client,
          params: {
            Bucket: target.bucket,
            Key: key,
            Body: createReadStream(join(workDir, file.path)),
            ...(file.contentType ? { ContentType: file.contentType } : {}),
          },
        }).done()
      } catch (error) {
        // The SDK's message names the bucket and the S3 error code, never the credentials.
        throw new RunnerFailure('UPLOAD_FAILED', `upload of ${file.filename} failed: ${error instanceof Error ? error.message : String(error)}`)
      }
      keys[file.alias] = key
    }
    return keys
  } finally {
    client.destroy()
  }
}
