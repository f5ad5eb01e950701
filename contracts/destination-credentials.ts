/**
 * How a storage destination's credentials reach the runner's upload step, and
 * only it. They are never part of a CommandSpec or a MediaCommand:
 *
 * - local mode, warm pool: in the job's stdin message beside the spec, held in
 *   the worker's memory and handed to the upload step only;
 * - one-shot runner (main.ts) and Kubernetes: a JSON file named by
 *   FFKUBE_DESTINATION_CREDENTIALS_FILE, read when the upload starts. In a pod
 *   the file is the per-command Secret, mounted in the upload container only.
 */

/** `{"accessKeyId", "secretAccessKey", "sessionToken"?}`, the same shape as S3_CREDENTIALS_FILE. */
export interface DestinationCredentials {
  accessKeyId: string
  secretAccessKey: string
  sessionToken?: string
}

export const DESTINATION_CREDENTIALS_FILE_ENV = 'FFKUBE_DESTINATION_CREDENTIALS_FILE'

/** The key of the per-command Secret that holds the credentials JSON, and the file name it is mounted as. */
export const DESTINATION_SECRET_KEY = 'credentials.json'

/**
 * `ffkube-<command_id>-destination`: the Secret the API creates for one
 * command (owned by its MediaCommand, so it is garbage-collected with it).
 */
export function destinationSecretName(commandId: string): string {
  return `ffkube-${commandId}-destination`
}

/** Reads credentials JSON; throws a message that never quotes the content. */
export function parseDestinationCredentials(json: string): DestinationCredentials {
  let parsed: unknown
  try {
    parsed = JSON.parse(json)
  } catch {
    throw new Error('destination credentials are not valid JSON')
  }
  const { accessKeyId, secretAccessKey, sessionToken } = (parsed ?? {}) as Record<string, unknown>
  if (typeof accessKeyId !== 'string' || typeof secretAccessKey !== 'string' || accessKeyId === '' || secretAccessKey === '') {
    throw new Error('destination credentials must hold accessKeyId and secretAccessKey strings')
  }
  return typeof sessionToken === 'string' && sessionToken !== '' ? { accessKeyId, secretAccessKey, sessionToken } : { accessKeyId, secretAccessKey }
}
