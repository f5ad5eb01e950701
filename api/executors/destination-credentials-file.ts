/**
 * Local mode's one-shot runner (no warm pool) gets a storage destination's
 * credentials as a 0600 file outside every work directory, named by
 * FFKUBE_DESTINATION_CREDENTIALS_FILE in its environment and read by its
 * upload step only; the executor removes it when the run ends.
 */
import { mkdir, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { DESTINATION_CREDENTIALS_FILE_ENV, type DestinationCredentials } from '../../contracts/destination-credentials.js'

/** `<dataDir>/runner/destinations/<run id>.json`: nothing the user's command can name. */
export function destinationCredentialsPath(dataDir: string, runId: string): string {
  return join(dataDir, 'runner', 'destinations', `${runId.replace(/[^0-9a-f-]/g, '_')}.json`)
}

/** The runner's environment, plus the credentials file when there are credentials. */
export async function withDestinationCredentials(
  env: NodeJS.ProcessEnv,
  dataDir: string,
  runId: string,
  credentials: DestinationCredentials | null,
): Promise<NodeJS.ProcessEnv> {
  if (!credentials) return env
  const file = destinationCredentialsPath(dataDir, runId)
  await mkdir(join(dataDir, 'runner', 'destinations'), { recursive: true, mode: 0o700 })
  await writeFile(file, JSON.stringify(credentials), { mode: 0o600 })
  return { ...env, [DESTINATION_CREDENTIALS_FILE_ENV]: file }
}

/** Removes a run's credentials file, if it wrote one. */
export async function removeDestinationCredentials(dataDir: string, runId: string): Promise<void> {
  await rm(destinationCredentialsPath(dataDir, runId), { force: true })
}
