/**
 * The submit-time rules of command bodies, as pure functions. Each throws the
 * ApiError its endpoint's error list assigns (callers pass the class where the
 * spec differs between endpoints) with a message that names the field.
 */
import { compressOutputsProblem, type CompressOutputs } from '../../contracts/compressed-outputs.js'
import { pendingDownloadPaths, inputPathsFor } from '../../contracts/ffmpeg-paths.js'
import { planFfmpegCommands, type FfmpegPlanner } from '../../contracts/ffmpeg-plan.js'
import { aliasProblem, filenameProblem, placeholderProblems, unusedOutputs, type DeclaredAliases } from '../../contracts/placeholders.js'
import * as urlGuard from '../../contracts/url-guard.js'
import { ValidationError, type ApiError } from '../errors/api-errors.js'
import { MAX_FILES_PER_MAP, MAX_METADATA_KEY_LENGTH, MAX_METADATA_KEYS, MAX_METADATA_STRING_LENGTH, MAX_URL_LENGTH } from '../validation/field-schemas.js'
import { MAX_COMMAND_LENGTH, MAX_COMMANDS, type Metadata } from './schemas.js'

export type ApiErrorClass = new (message: string) => ApiError

export { MAX_COMMAND_LENGTH, MAX_COMMANDS }
export { MAX_FILES_PER_MAP, MAX_METADATA_KEYS, MAX_URL_LENGTH }

/** Why `value` is not a usable http(s) URL, or null. */
export function urlProblem(value: string): string | null {
  if (value.length > MAX_URL_LENGTH) return `must be at most ${MAX_URL_LENGTH} characters`
  let url: URL
  try {
    url = new URL(value)
  } catch {
    return 'must be an absolute http(s) URL'
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return `must use http or https, not ${url.protocol.slice(0, -1)}`
  if (url.hostname === '') return 'must name a host'
  if (url.username !== '' || url.password !== '') return 'must not carry credentials'
  // The URL parser drops tabs and newlines and escapes the rest, so the URL it reads is not the one sent.
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u0020\u007f]/.test(value)) return 'must not contain spaces or control characters'
  return null
}

/** 422 unless `value` is an http(s) URL. */
export function checkUrl(value: string, field: string): void {
  const problem = urlProblem(value)
  if (problem) throw new ValidationError(`${field}: ${problem}`)
}

/**
 * The one rule for a webhook URL, the account's (`PUT /webhook-config`, field
 * `url`) and a command's (`webhook_url`): an http(s) URL as above, and not a
 * literal non-public IP address unless ALLOW_PRIVATE_NETWORKS. Host names
 * are judged after DNS, on every delivery. 422 on every endpoint, as the spec
 * lists. Returns the URL as it will be called.
 */
export function validateWebhookUrl(raw: string, allowPrivateNetworks: boolean, field = 'url'): string {
  const verdict = urlGuard.checkUrl(raw, { allowPrivateNetworks })
  if (!verdict.ok) throw new ValidationError(`${field}: ${verdict.reason}`)
  checkUrl(raw, field)
  return verdict.url.href
}

/**
 * Metadata: at most 10 keys, values string, number or boolean (422 otherwise,
 * as every endpoint's list says). Null and absent both mean none.
 */
export function checkMetadata(value: unknown, field = 'metadata'): Metadata | null {
  if (value === undefined || value === null) return null
  if (typeof value !== 'object' || Array.isArray(value)) throw new ValidationError(`${field}: must be an object`)
  const entries = Object.entries(value)
  if (entries.length > MAX_METADATA_KEYS) {
    throw new ValidationError(`${field}: at most ${MAX_METADATA_KEYS} keys are allowed, got ${entries.length}`)
  }
  for (const [key, item] of entries) {
    if (key.length === 0 || [...key].length > MAX_METADATA_KEY_LENGTH) throw new ValidationError(`${field}: keys must be 1 to ${MAX_METADATA_KEY_LENGTH} characters`)
    // MongoDB's rules for a stored key (a NUL cannot be stored at all), and no other control character either.
    // eslint-disable-next-line no-control-regex
    if (/[\u0000-\u001f\u007f]/.test(key)) throw new ValidationError(`${field}: keys must not contain control characters, got ${JSON.stringify(key)}`)
    if (key.startsWith('$') || key.includes('.')) throw new ValidationError(`${field}.${key}: keys must not start with "$" or contain "."`)
    const type = typeof item
    if (type !== 'string' && type !== 'number' && type !== 'boolean') {
      throw new ValidationError(`${field}.${key}: must be a string, number or boolean`)
    }
    if (type === 'number' && !Number.isFinite(item)) throw new ValidationError(`${field}.${key}: must be a finite number`)
    if (type === 'string' && [...(item as string)].length > MAX_METADATA_STRING_LENGTH) {
      throw new ValidationError(`${field}.${key}: must be at most ${MAX_METADATA_STRING_LENGTH} characters`)
    }
  }
  return value as Metadata
}

function checkCount(map: Record<string, string>, field: string, AliasError: ApiErrorClass): void {
  const count = Object.keys(map).length
  if (count > MAX_FILES_PER_MAP) throw new AliasError(`${field}: at most ${MAX_FILES_PER_MAP} entries are allowed, got ${count}`)
}

/** `in_*` aliases: a bad one is `Fault` (400 on FFmpeg endpoints, 422 on the yt-dlp ones). */
export function checkInputAliases(inputs: Record<string, string>, field: string, Fault: ApiErrorClass): void {
  if (Object.keys(inputs).length === 0) throw new Fault(`${field}: at least one input is required`)
  checkCount(inputs, field, Fault)
  for (const alias of Object.keys(inputs)) {
    const problem = aliasProblem(alias, 'input')
    if (problem) throw new Fault(`${field}: key "${alias}" ${problem}`)
  }
}

/** The URLs of an input map: 422 on every endpoint. */
export function checkInputUrls(inputs: Record<string, string>, field: string): void {
  for (const [alias, url] of Object.entries(inputs)) checkUrl(url, `${field}.${alias}`)
}

/** `out_*` → plain filename; both faults are `Fault` (the endpoint's status for invalid aliases). */
export function checkOutputFiles(outputs: Record<string, string>, field: string, Fault: ApiErrorClass): void {
  checkCount(outputs, field, Fault)
  const seen = new Map<string, string>()
  for (const [alias, filename] of Object.entries(outputs)) {
    const problem = aliasProblem(alias, 'output')
    if (problem) throw new Fault(`${field}: key "${alias}" ${problem}`)
    const fileProblem = filenameProblem(filename)
    if (fileProblem) throw new Fault(`${field}.${alias}: filename "${filename}" ${fileProblem}`)
    const other = seen.get(filename)
    if (other) throw new Fault(`${field}.${alias}: filename "${filename}" is already used by ${other}`)
    seen.set(filename, alias)
  }
}

/**
 * compress_outputs: `true`, or declared `out_*` aliases without duplicates;
 * a fault is `Fault` (the endpoint's status for output_files). Returns the
 * value to record, or null when the body has none.
 */
export function checkCompressOutputs(value: CompressOutputs | undefined, outputs: Record<string, string>, field: string, Fault: ApiErrorClass): CompressOutputs | null {
  if (value === undefined) return null
  const problem = compressOutputsProblem(value, Object.keys(outputs))
  if (problem) throw new Fault(`${field}: ${problem}`)
  return value
}

/** The first word of a command string, e.g. `ffmpeg`. */
export function firstWord(command: string): string {
  return command.trimStart().split(/\s+/, 1)[0] ?? ''
}

/**
 * A command string of an FFmpeg endpoint: begins with the word `ffmpeg` (as
 * the spec's examples do; another program is refused), has arguments after
 * it, and names only declared aliases in its placeholders.
 */
export function checkFfmpegCommand(command: string, field: string, declared: DeclaredAliases, Fault: ApiErrorClass): void {
  const problem = ffmpegCommandProblem(command)
  if (problem) throw new Fault(`${field}: ${problem}`)
  checkPlaceholders(command, field, declared, Fault)
}

/** Why `command` is not an FFmpeg command string, leaving its placeholders aside, or null. */
export function ffmpegCommandProblem(command: string): string | null {
  if (command.length > MAX_COMMAND_LENGTH) return `must be at most ${MAX_COMMAND_LENGTH} characters`
  const program = firstWord(command)
  if (program !== 'ffmpeg') return program === '' ? 'must not be empty' : `must begin with "ffmpeg", not "${program}"`
  if (command.trim() === 'ffmpeg') return 'has no arguments after "ffmpeg"'
  return null
}

/**
 * run-ytdlp-command's string holds FFmpeg arguments only. A leading `ffmpeg`
 * word is tolerated, because clients copy commands from the other endpoints,
 * and removed here; returns the arguments the runner gets.
 */
export function ytdlpFfmpegArguments(command: string, field: string, declared: DeclaredAliases): string {
  if (command.length > MAX_COMMAND_LENGTH) throw new ValidationError(`${field}: must be at most ${MAX_COMMAND_LENGTH} characters`)
  const trimmed = command.trim()
  const args = firstWord(trimmed) === 'ffmpeg' ? trimmed.slice('ffmpeg'.length).trim() : trimmed
  if (args === '') throw new ValidationError(`${field}: must hold FFmpeg arguments`)
  checkPlaceholders(args, field, declared, ValidationError)
  return args
}

function checkPlaceholders(command: string, field: string, declared: DeclaredAliases, Fault: ApiErrorClass): void {
  const problems = placeholderProblems(command, declared)
  if (problems.length > 0) throw new Fault(`${field}: ${problems.join('; ')}`)
}

/** Every declared output must be written by some command's placeholder. */
export function checkOutputsUsed(commands: readonly string[], outputs: Record<string, string>, field: string, Fault: ApiErrorClass): void {
  const unused = unusedOutputs(commands, Object.keys(outputs))
  if (unused.length > 0) throw new Fault(`${field}: output ${unused.join(', ')} is declared but no placeholder uses it`)
}

/**
 * The runner's argument policy (contracts/ffmpeg-plan.ts), applied at submit
 * time so a command the runner would refuse is refused now, with the
 * endpoint's status, instead of ending FAILED later. `inputs` are the input
 * URLs (their extensions shape the work-dir paths) or, for yt-dlp downloads
 * and presets, aliases whose files do not exist yet. `folder`: the command
 * brings an input_compressed_folder, so relative paths of its entries pass
 * (the runner checks them before running).
 */
export function checkArgumentPolicy(
  commands: readonly string[],
  files: { inputs: Record<string, string> | readonly string[]; outputs: Record<string, string>; folder?: boolean },
  mode: 'ffmpeg' | 'arguments',
  field: (commandIndex: number | null) => string,
  Fault: ApiErrorClass,
  planner: FfmpegPlanner = planFfmpegCommands,
): void {
  const inputs = Array.isArray(files.inputs) ? pendingDownloadPaths(files.inputs) : inputPathsFor(files.inputs as Record<string, string>)
  const plan = planner(commands, { mode, inputs, outputs: files.outputs, folder: files.folder ?? false })
  if (!plan.ok) throw new Fault(`${field(plan.violation.commandIndex)}: ${plan.violation.message}`)
}

/** At most 10 commands in a chained or multiple request (422 on both endpoints). */
export function checkCommandCount(count: number, field: string): void {
  if (count > MAX_COMMANDS) throw new ValidationError(`${field}: at most ${MAX_COMMANDS} commands are allowed, got ${count}`)
}
