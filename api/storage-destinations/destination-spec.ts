import type { StorageDestinationSpec } from '../../contracts/command-spec.js'
import type { StorageDestinationDocument } from './storage-destination-repository.js'

/**
 * What a command records of its destination when it is accepted, and what the
 * runner receives in its spec: where to write, never how to sign.
 */
export function toDestinationSpec(doc: StorageDestinationDocument): StorageDestinationSpec {
  return {
    id: doc._id,
    endpointUrl: doc.endpoint_url,
    region: doc.region,
    bucket: doc.bucket,
    prefix: doc.prefix,
    pathStyle: doc.path_style,
    publicBaseUrl: doc.public_base_url,
  }
}

/**
 * An external output's storage_url: `{public_base_url}/{key}`, each key
 * segment percent-encoded; null for a private bucket (no public_base_url).
 */
export function publicUrlFor(publicBaseUrl: string | null | undefined, key: string): string | null {
  if (!publicBaseUrl) return null
  return `${publicBaseUrl.replace(/\/+$/, '')}/${key.split('/').map(encodeURIComponent).join('/')}`
}
