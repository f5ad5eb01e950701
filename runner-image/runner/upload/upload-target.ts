/**
 * Where a command's outputs go. Managed storage (INTERNAL) from the runner's
 * S3_* configuration; a customer's bucket (EXTERNAL) when the spec names a
 * storage destination. Credentials are read only when the upload step calls
 * `credentials()`, never before, and an EXTERNAL upload never falls back to
 * the runner's own credentials or the SDK's default chain.
 */
import type { CommandSpec } from '../../../contracts/command-spec.js'
import { DESTINATION_CREDENTIALS_FILE_ENV, type DestinationCredentials } from '../../../contracts/destination-credentials.js'
import { readDestinationCredentials, readStorageCredentials, type RunnerConfig } from '../config.js'
import type { UploadTarget } from './s3-upload.js'

/**
 * `held`: the destination's credentials when the caller already holds them in
 * memory (the warm pool worker gets them in its job message); otherwise they
 * come from the file named by FFKUBE_DESTINATION_CREDENTIALS_FILE in `env`.
 */
export function uploadTargetFor(spec: CommandSpec, config: RunnerConfig, env: NodeJS.ProcessEnv, held?: DestinationCredentials | null): UploadTarget {
  const destination = spec.storageDestination
  if (!destination) {
    return { location: 'INTERNAL', ...config.storage, guard: null, credentials: () => readStorageCredentials(env) }
  }
  return {
    location: 'EXTERNAL',
    endpoint: destination.endpointUrl,
    region: destination.region,
    bucket: destination.bucket,
    prefix: destination.prefix,
    forcePathStyle: destination.pathStyle,
    // The endpoint is the customer's: it goes through the same private-network guard as every user URL.
    guard: { allowPrivateNetworks: config.allowPrivateNetworks },
    credentials: async () => {
      const credentials = held ?? (await readDestinationCredentials(env))
      if (!credentials) throw new Error(`no credentials for storage destination ${destination.id} (${DESTINATION_CREDENTIALS_FILE_ENV} is unset)`)
      return credentials
    },
  }
}
