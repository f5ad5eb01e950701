/**
 * The object keys a command's declared outputs will have, checked at submit
 * against S3's 1,024 bytes: `{prefix}/{command_id}/{filename}` with the
 * destination's prefix (or managed storage's), a command id (always a
 * 36-character UUID) and the filename as the shortest name it can expand to.
 * The runner checks every key again before it stores anything, including the
 * files of a folder output, whose names only ffmpeg knows.
 */
import { MANAGED_OUTPUT_PREFIX, objectKey, objectKeyProblem } from '../../contracts/object-keys.js'
import type { StorageDestinationSpec } from '../../contracts/command-spec.js'
import type { ApiErrorClass } from './validation.js'

/** A command id's length: every one is a UUID (contracts/command-id.ts). */
const ANY_COMMAND_ID = '00000000-0000-0000-0000-000000000000'

/**
 * The shortest file name a declared filename stands for: a numbered sequence
 * (`%d`, `%03d`) writes at least its width in digits, `%v` at least one
 * character, `%%` one percent sign (contracts/output-patterns.ts).
 */
export function shortestName(filename: string): string {
  return filename.replace(/%(?:(%)|v|0?(\d{0,2})d)/g, (_, percent: string | undefined, width: string | undefined) =>
    percent ? '%' : '0'.repeat(Math.max(1, Number(width || '1'))),
  )
}

/** Throws `Fault` naming `field.<alias>` when an output's key would be over S3's limit. */
export function checkOutputKeys(outputFiles: Record<string, string>, destination: StorageDestinationSpec | null, field: string, Fault: ApiErrorClass): void {
  const prefix = destination ? destination.prefix : MANAGED_OUTPUT_PREFIX
  for (const [alias, filename] of Object.entries(outputFiles)) {
    const problem = objectKeyProblem(objectKey(prefix, ANY_COMMAND_ID, shortestName(filename)))
    if (problem === null) continue
    const where = destination ? `the storage destination's prefix, the command id and this filename` : 'the command id and this filename'
    throw new Fault(`${field}.${alias}: ${problem} (${where}); give it a shorter name`)
  }
}
