/**
 * Where a command's outputs go, and with which credentials. Managed storage
 * (INTERNAL) from the runner's S3_* configuration; a customer's bucket
 * (EXTERNAL) when the spec names a storage destination. Credentials are read
 * only when the upload calls `credentials()`, never before (they are not part
 * of RunnerConfig), and an EXTERNAL upload never falls back to the runner's
 * own credentials or the SDK's default chain.
 */
import { readFile } from 'node:fs/promises'
import type { CommandSpec } from '../../../contracts/command-spec.js'
import {
  DESTINATION_CREDENTIALS_FILE_ENV,
  parseDestinationCredentials,
  type DestinationCredentials,
} from '../../../contracts/destination-credentials.js'
import { RunnerConfigError, type RunnerConfig } from '../config.js'

type StorageCredentials = { accessKeyId: string; secretAccessKey: string; sessionToken?: string }

/** Where outputs go: managed storage (INTERNAL) or a customer's bucket (EXTERNAL). */
export interface UploadTarget {
  location: 'INTERNAL' | 'EXTERNAL'
  endpoint: string | null
  region: string
  bucket: string
  prefix: string
  forcePathStyle: boolean
  /** Set for a user-supplied endpoint: every connection goes through the private-network guard. */
  guard: { allowPrivateNetworks: boolean } | null
  /** Called by the upload when it starts, so credentials are read only then. */
  credentials: () => Promise<StorageCredentials | null>
}

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

/**
 * Managed-storage credentials. `S3_CREDENTIALS_FILE` (JSON `{"accessKeyId",
 * "secretAccessKey", "sessionToken"?}`) is preferred: a secret read from a
 * file at upload time is never in the runner's process environment
 * (/proc/<pid>/environ) while ffmpeg runs. Otherwise `S3_ACCESS_KEY_ID` /
 * `S3_SECRET_ACCESS_KEY`; null lets the SDK's default chain decide (e.g. a
 * pod identity).
 */
async function readStorageCredentials(env: NodeJS.ProcessEnv): Promise<StorageCredentials | null> {
  const file = env.S3_CREDENTIALS_FILE
  if (file) {
    const parsed = JSON.parse(await readFile(file, 'utf8')) as Record<string, unknown>
    const { accessKeyId, secretAccessKey, sessionToken } = parsed
    if (typeof accessKeyId !== 'string' || typeof secretAccessKey !== 'string') {
      throw new RunnerConfigError('S3_CREDENTIALS_FILE must hold accessKeyId and secretAccessKey strings')
    }
    return typeof sessionToken === 'string' ? { accessKeyId, secretAccessKey, sessionToken } : { accessKeyId, secretAccessKey }
  }
  const accessKeyId = env.S3_ACCESS_KEY_ID
  const secretAccessKey = env.S3_SECRET_ACCESS_KEY
  return accessKeyId && secretAccessKey ? { accessKeyId, secretAccessKey } : null
}

/**
 * A storage destination's credentials from the JSON file named by
 * FFKUBE_DESTINATION_CREDENTIALS_FILE (contracts/destination-credentials.ts);
 * null when the variable is unset.
 */
async function readDestinationCredentials(env: NodeJS.ProcessEnv): Promise<DestinationCredentials | null> {
  const file = env[DESTINATION_CREDENTIALS_FILE_ENV]
  if (!file) return null
  return parseDestinationCredentials(await readFile(file, 'utf8'))
}
