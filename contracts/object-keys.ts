/**
 * Where a command's outputs are stored: `{prefix}/{command_id}/{filename}`,
 * the spec's layout (DESIGN.md), and S3's limit on such a key. Pure; shared by
 * the runner, which stores the objects, and the API, which refuses at submit
 * the keys it can already tell are too long.
 */

/**
 * S3 refuses a key longer than 1,024 bytes of UTF-8. Not every store does
 * (versitygw's posix backend stores longer ones, ADR 0007), so the runner
 * checks it itself: an output is refused the same way on every store.
 */
export const MAX_OBJECT_KEY_BYTES = 1024

/**
 * The prefix of every output in the managed bucket. Fixed, not configured:
 * the API accepts a runner's report only for keys under
 * `outputs/<command_id>/` (contracts/command-folder.ts), so the runner
 * and the API must not be able to disagree on it.
 */
export const MANAGED_OUTPUT_PREFIX = 'outputs'

/** `{prefix}/{command_id}/{filename}`; no leading slash when the prefix is empty. */
export function objectKey(prefix: string, commandId: string, filename: string): string {
  const trimmed = prefix.replace(/^\/+|\/+$/g, '')
  return trimmed === '' ? `${commandId}/${filename}` : `${trimmed}/${commandId}/${filename}`
}

/** Why `key` cannot be stored (it is over S3's limit), or null. */
export function objectKeyProblem(key: string): string | null {
  const bytes = Buffer.byteLength(key)
  if (bytes <= MAX_OBJECT_KEY_BYTES) return null
  return `its object key would be ${bytes} bytes long and S3 allows at most ${MAX_OBJECT_KEY_BYTES}`
}
