/**
 * Where a command's outputs go. Managed storage (INTERNAL) from the runner's
 * S3_* configuration; a customer's bucket (EXTERNAL) arrives with the
 * storage-destination work. Credentials are read only when the upload step
 * calls `credentials()`.
 */
import type { CommandSpec } from '../../contracts/command-spec.js'
import { readStorageCredentials, type RunnerConfig } from './config.js'
import type { UploadTarget } from './upload-step.js'

export function uploadTargetFor(_spec: CommandSpec, config: RunnerConfig, env: NodeJS.ProcessEnv): UploadTarget {
  return { location: 'INTERNAL', ...config.storage, credentials: () => readStorageCredentials(env) }
}
