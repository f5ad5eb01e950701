/**
 * The only place a command's outputs may be: the managed bucket under
 * `outputs/<command_id>/`, or its storage destination's bucket under
 * `{prefix}/<command_id>/` (contracts/object-keys.ts, where the runner puts
 * them). A SUCCESS event comes from a runner pod whose ffmpeg shares a
 * process space and a NATS connection with it, so its keys are hostile
 * input: the API's status projector presigns a GET for the ones it records
 * and deletes them when the quota refuses them. Pure; the projector checks
 * every SUCCESS with it before anything is read, counted, signed or deleted.
 */
import { MANAGED_OUTPUT_PREFIX, objectKey } from './object-keys.js'
import type { StorageDestinationSpec } from './command-spec.js'

/** The error_status of a command whose runner reported an output outside the command's folder. */
export const OUTPUT_OUTSIDE_COMMAND_FOLDER = 'OUTPUT_OUTSIDE_COMMAND_FOLDER'

/** Where one command may store: its kind of storage, the bucket, and the key prefix ending in `/`. */
export interface CommandFolder {
  location: 'INTERNAL' | 'EXTERNAL'
  bucket: string
  folder: string
}

/** The command's folder: in its destination's bucket if it has one, else in the managed bucket (the service's, not any). */
export function commandFolder(commandId: string, destination: StorageDestinationSpec | null, managedBucket: string): CommandFolder {
  if (destination) return { location: 'EXTERNAL', bucket: destination.bucket, folder: objectKey(destination.prefix, commandId, '') }
  return { location: 'INTERNAL', bucket: managedBucket, folder: objectKey(MANAGED_OUTPUT_PREFIX, commandId, '') }
}

/** One reported object outside its command's folder; `reason` names no value of the event, so it may be shown to the command's owner. */
export interface MisplacedOutput {
  alias: string
  /** As reported, for the operator's log only (a forged event may name another tenant's bucket). */
  bucket: unknown
  objectKey: unknown
  reason: string
}

/**
 * The first output, or member of a multi-file output, of a SUCCESS's
 * `output_files` that is not an object of `folder`; null when all are. Each
 * key must also be exactly its filename in the folder, as the runner stores
 * it (contracts/object-keys.ts): the API names playback copies and MIME types
 * after filenames, so a filename must be as safe as a key. The event is
 * untrusted JSON, so its shape is checked here too.
 */
export function misplacedOutput(outputFiles: unknown, folder: CommandFolder): MisplacedOutput | null {
  if (!isRecord(outputFiles)) return { alias: '', bucket: null, objectKey: null, reason: 'output_files is not an object' }
  for (const [alias, result] of Object.entries(outputFiles)) {
    if (!isRecord(result)) return { alias, bucket: null, objectKey: null, reason: 'its result is not an object' }
    const misplaced = (objectKey: unknown, reason: string): MisplacedOutput => ({ alias, bucket: result.bucket, objectKey, reason })
    if (result.storage_location !== folder.location) return misplaced(result.object_key, `it is not in ${folder.location === 'INTERNAL' ? 'managed storage' : "the command's storage destination"}`)
    if (result.bucket !== folder.bucket) return misplaced(result.object_key, "it is in another bucket than the command's")
    const members = result.files === undefined ? [] : Array.isArray(result.files) ? result.files : null
    if (members === null) return misplaced(result.object_key, 'its files are not a list')
    for (const file of [result, ...members]) {
      const key = isRecord(file) ? file.object_key : undefined
      const problem = keyProblem(key, folder.folder) ?? (isRecord(file) && typeof file.filename === 'string' && key === `${folder.folder}${file.filename}` ? null : "its object key is not its filename in the command's folder")
      if (problem !== null) return misplaced(key, problem)
    }
  }
  return null
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/**
 * Why `key` is not a plain object of `folder`, or null. S3 keys are not
 * paths (`outputs/A/../B/x` is a literal key of A's folder), but a console,
 * a proxy or a sync tool may normalise or decode one, so a name that would
 * then leave the folder is refused rather than reasoned about: an empty, `.`
 * or `..` segment, a backslash or control character, or any of them spelled
 * with percent-encoding or Unicode compatibility forms (fullwidth `．`, `／`).
 */
function keyProblem(key: unknown, folder: string): string | null {
  if (typeof key !== 'string') return 'its object key is not a string'
  if (!key.startsWith(folder)) return "its object key is not under the command's folder"
  const rest = key.slice(folder.length)
  if (rest === '') return 'its object key names the folder itself'
  for (const segment of rest.split('/')) {
    const read = readable(segment)
    if (read === '' || read === '.' || read === '..') return "its object key has an empty, '.' or '..' part"
    // eslint-disable-next-line no-control-regex
    if (/[/\\\u0000-\u001f\u007f]/.test(read)) return 'its object key has a backslash, a control character or an encoded separator'
  }
  return null
}

const PLAIN = /^[\x20-\x24\x26-\x5b\x5d-\x7e]*$/

/**
 * The segment as a lenient reader might show it: every run of valid
 * percent-escapes decoded, again until nothing changes (double encoding;
 * each pass shortens it, so this ends), then NFKC-normalised.
 */
function readable(segment: string): string {
  // The common case, a runner's own name: printable ASCII without escapes reads as written.
  if (PLAIN.test(segment)) return segment
  let current = segment
  for (;;) {
    const decoded = current.replace(/(?:%[0-9A-Fa-f]{2})+/g, decodeRun)
    if (decoded === current) return current.normalize('NFKC')
    current = decoded
  }
}

/** A run of percent-escapes as text; one that is not UTF-8 is left as written, as a lenient reader leaves it. */
function decodeRun(run: string): string {
  try {
    return decodeURIComponent(run)
  } catch {
    return run
  }
}
