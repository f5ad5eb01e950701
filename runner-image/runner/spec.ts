/** Reads a CommandSpec from JSON, checking the shape the runner relies on. */
import { FORMAT_SELECTORS, type CommandSpec, type FormatSelector } from '../../contracts/command-spec.js'
import { COMMAND_TYPES } from '../../contracts/command-types.js'

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
  return {
    commandId: raw.commandId,
    accountId: typeof raw.accountId === 'string' ? raw.accountId : '',
    commandType: raw.commandType as CommandSpec['commandType'],
    inputFiles: stringMap(raw.inputFiles ?? {}, 'inputFiles'),
    outputFiles: stringMap(raw.outputFiles ?? {}, 'outputFiles'),
    ffmpegCommands: raw.ffmpegCommands as string[],
    ytdlp,
    storageDestinationId: typeof raw.storageDestinationId === 'string' ? raw.storageDestinationId : null,
    submittedAt: typeof raw.submittedAt === 'string' ? raw.submittedAt : new Date(0).toISOString(),
  }
}
