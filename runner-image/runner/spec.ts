/** Reads a CommandSpec from JSON, checking the shape the runner relies on. */
import { FORMAT_SELECTORS, type CommandLimits, type CommandSpec, type FormatSelector, type StorageDestinationSpec } from '../../contracts/command-spec.js'
import { COMMAND_TYPES } from '../../contracts/command-types.js'
import { compressOutputsProblem } from '../../contracts/compressed-outputs.js'

export class SpecError extends Error {
  override readonly name = 'SpecError'
}

function stringMap(value: unknown, field: string): Record<string, string> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new SpecError(`${field} must be an object`)
  for (const [key, entry] of Object.entries(value)) {
    if (typeof entry !== 'string') throw new SpecError(`${field}.${key} must be a string`)
  }
  return value as Record<string, string>
}

/** The destination's description, or null; a malformed one is refused rather than uploaded somewhere unintended. */
function storageDestination(value: unknown): StorageDestinationSpec | null {
  if (value === null || value === undefined) return null
  const d = value as Record<string, unknown>
  for (const field of ['id', 'endpointUrl', 'region', 'bucket', 'prefix'] as const) {
    if (typeof d[field] !== 'string') throw new SpecError(`storageDestination.${field} must be a string`)
  }
  if (typeof d.pathStyle !== 'boolean') throw new SpecError('storageDestination.pathStyle must be a boolean')
  if (d.publicBaseUrl !== null && d.publicBaseUrl !== undefined && typeof d.publicBaseUrl !== 'string') {
    throw new SpecError('storageDestination.publicBaseUrl must be a string or null')
  }
  return {
    id: d.id as string,
    endpointUrl: d.endpointUrl as string,
    region: d.region as string,
    bucket: d.bucket as string,
    prefix: d.prefix as string,
    pathStyle: d.pathStyle,
    publicBaseUrl: (d.publicBaseUrl as string | null | undefined) ?? null,
  }
}

/** Aliases of inputFiles only: a name that is no input marks nothing. */
function managedInputs(value: unknown, inputFiles: Record<string, string>): string[] {
  if (value === undefined || value === null) return []
  if (!Array.isArray(value) || !value.every((alias) => typeof alias === 'string' && Object.hasOwn(inputFiles, alias))) {
    throw new SpecError('managedInputs must be an array of inputFiles aliases')
  }
  return value as string[]
}

/** A positive number (whole when `whole`), or a SpecError naming the field. */
function positive(value: unknown, field: string, whole = false): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0 || (whole && !Number.isInteger(value))) {
    throw new SpecError(`${field} must be a positive ${whole ? 'whole ' : ''}number`)
  }
  return value
}

/** The folder's URL and whether it is managed. */
function folderFields(raw: Record<string, unknown>): Pick<CommandSpec, 'inputCompressedFolder' | 'managedCompressedFolder'> {
  if (raw.inputCompressedFolder === undefined || raw.inputCompressedFolder === null) return {}
  if (typeof raw.inputCompressedFolder !== 'string') throw new SpecError('inputCompressedFolder must be a string')
  if (raw.managedCompressedFolder !== undefined && typeof raw.managedCompressedFolder !== 'boolean') throw new SpecError('managedCompressedFolder must be a boolean')
  return { inputCompressedFolder: raw.inputCompressedFolder, managedCompressedFolder: raw.managedCompressedFolder === true }
}

/** compressOutputs: true, or declared output aliases (contracts/compressed-outputs.ts); absent when not asked. */
function compressField(raw: Record<string, unknown>, outputFiles: Record<string, string>): Pick<CommandSpec, 'compressOutputs'> {
  const value = raw.compressOutputs
  if (value === undefined || value === null) return {}
  if (value === true) return { compressOutputs: true }
  if (!Array.isArray(value) || !value.every((alias) => typeof alias === 'string')) throw new SpecError('compressOutputs must be true or an array of strings')
  const problem = compressOutputsProblem(value as string[], Object.keys(outputFiles))
  if (problem) throw new SpecError(`compressOutputs ${problem}`)
  return { compressOutputs: value as string[] }
}

export function parseCommandSpec(json: string): CommandSpec {
  const raw = JSON.parse(json) as Record<string, unknown>
  if (typeof raw.commandId !== 'string' || raw.commandId === '') throw new SpecError('commandId must be a string')
  if (!COMMAND_TYPES.includes(raw.commandType as never)) throw new SpecError('commandType is not a command type')
  if (!Array.isArray(raw.ffmpegCommands) || !raw.ffmpegCommands.every((c) => typeof c === 'string')) {
    throw new SpecError('ffmpegCommands must be an array of strings')
  }
  let ytdlp: CommandSpec['ytdlp'] = null
  if (raw.ytdlp !== null && raw.ytdlp !== undefined) {
    const y = raw.ytdlp as Record<string, unknown>
    if (!FORMAT_SELECTORS.includes(y.formatSelector as never)) throw new SpecError('ytdlp.formatSelector is not a format selector')
    ytdlp = { inputUrls: stringMap(y.inputUrls, 'ytdlp.inputUrls'), formatSelector: y.formatSelector as FormatSelector }
  }
  const inputFiles = stringMap(raw.inputFiles ?? {}, 'inputFiles')
  const outputFiles = stringMap(raw.outputFiles ?? {}, 'outputFiles')
  return {
    commandId: raw.commandId,
    accountId: typeof raw.accountId === 'string' ? raw.accountId : '',
    commandType: raw.commandType as CommandSpec['commandType'],
    inputFiles,
    managedInputs: managedInputs(raw.managedInputs, inputFiles),
    outputFiles,
    ...compressField(raw, outputFiles),
    ffmpegCommands: raw.ffmpegCommands as string[],
    ytdlp,
    storageDestinationId: typeof raw.storageDestinationId === 'string' ? raw.storageDestinationId : null,
    storageDestination: storageDestination(raw.storageDestination),
    submittedAt: typeof raw.submittedAt === 'string' ? raw.submittedAt : new Date(0).toISOString(),
    ...folderFields(raw),
    ...limits(raw.limits),
    ...storageRoom(raw.storageRoomBytes),
  }
}

/** The room left under the storage quota, when the spec has one; a malformed value is refused rather than read as no quota. */
function storageRoom(value: unknown): Pick<CommandSpec, 'storageRoomBytes'> {
  if (value === null || value === undefined) return {}
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) throw new SpecError('storageRoomBytes must be a whole number of bytes, 0 or more')
  return { storageRoomBytes: value }
}

/**
 * The command's limits, when the spec has them. The runner itself enforces
 * the folder caps and maxOutputFiles (the executor the rest); a malformed
 * value is refused rather than read as no cap.
 */
function limits(value: unknown): { limits?: CommandLimits } {
  if (value === null || value === undefined) return {}
  if (typeof value !== 'object') throw new SpecError('limits must be an object')
  const l = value as Record<string, unknown>
  const folder = l.folder as Record<string, unknown> | null | undefined
  return {
    limits: {
      maxRunSeconds: positive(l.maxRunSeconds, 'limits.maxRunSeconds'),
      vcpuMillis: positive(l.vcpuMillis, 'limits.vcpuMillis'),
      memoryMib: positive(l.memoryMib, 'limits.memoryMib'),
      ...(folder !== undefined && folder !== null
        ? { folder: { maxBytes: positive(folder.maxBytes, 'limits.folder.maxBytes', true), maxEntries: positive(folder.maxEntries, 'limits.folder.maxEntries', true), maxRatio: positive(folder.maxRatio, 'limits.folder.maxRatio', true) } }
        : {}),
      ...(l.maxOutputFiles !== undefined ? { maxOutputFiles: positive(l.maxOutputFiles, 'limits.maxOutputFiles', true) } : {}),
    },
  }
}
