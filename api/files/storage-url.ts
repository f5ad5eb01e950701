/**
 * The storage_url of a managed file: a GET of its object, presigned with the
 * service's credentials, so a client (or a later command, see
 * managed-urls.ts) can read it without an API key.
 */
import { GetObjectCommand, type S3Client } from '@aws-sdk/client-s3'
import { getSignedUrl } from '@aws-sdk/s3-request-presigner'

/** SigV4's longest validity: a storage_url works for seven days after it is signed. */
export const STORAGE_URL_TTL_SECONDS = 7 * 24 * 3600

/** Presigns a GET of an object in the managed bucket (a local computation, no request). */
export function presignGet(s3: S3Client, bucket: string, key: string): Promise<string> {
  return getSignedUrl(s3, new GetObjectCommand({ Bucket: bucket, Key: key }), { expiresIn: STORAGE_URL_TTL_SECONDS })
}
