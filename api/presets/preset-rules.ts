/**
 * What makes a preset valid, how an update merges into one, and how executing
 * one becomes command drafts. Pure; statuses as the presets endpoints assign
 * them: 400 for invalid values, 422 for excess metadata and a missing command.
 */
import { requestedLimits } from '../commands/command-limits.js'
import { aliasProblem, referencedAliases } from '../../contracts/placeholders.js'
import { InvalidRequestError, ValidationError } from '../errors/api-errors.js'
import { draftChained, draftFfmpegCommand, type CommandDraft } from '../commands/drafts.js'
import type { Metadata } from '../commands/schemas.js'
import { checkArgumentPolicy, checkCommandCount, checkFfmpegCommand, checkMetadata, checkOutputFiles, checkOutputsUsed, MAX_METADATA_KEYS } from '../commands/validation.js'
import type { CreatePresetBody, ExecutePresetBody, PresetCommandType, UpdatePresetBody } from './schemas.js'

/** A preset's definition: everything but its identity and timestamps. */
export interface PresetDefinition {
  name: string
  description: string | null
  command_type: PresetCommandType
  /** FFMPEG_COMMAND only. */
  ffmpeg_command: string | null
  /** CHAINED_COMMAND (run in order in one sandbox) and MULTIPLE_COMMAND (one command each, in parallel). */
  ffmpeg_commands: string[] | null
  input_file_keys: string[]
  output_file_definitions: Record<string, string>
  metadata: Metadata | null
}

/** The definition as submitted: metadata not yet checked. */
export type UncheckedDefinition = Omit<PresetDefinition, 'metadata'> & { metadata: unknown }

export function definitionFromCreate(body: CreatePresetBody): UncheckedDefinition {
  return {
    name: body.name,
    description: body.description ?? null,
    command_type: body.command_type ?? 'FFMPEG_COMMAND',
    ffmpeg_command: body.ffmpeg_command ?? null,
    ffmpeg_commands: body.ffmpeg_commands ?? null,
    input_file_keys: body.input_file_keys,
    output_file_definitions: body.output_file_definitions,
    metadata: body.metadata ?? null,
  }
}

const UPDATABLE = ['name', 'description', 'command_type', 'ffmpeg_command', 'ffmpeg_commands', 'input_file_keys', 'output_file_definitions', 'metadata'] as const

/**
 * An update applied to a definition. Metadata is replaced whole, as the spec
 * says. When the command type changes, the command field of the old type is
 * dropped unless the body sets it (and then the check refuses it).
 */
export function definitionFromUpdate(existing: PresetDefinition, body: UpdatePresetBody): UncheckedDefinition {
  if (!UPDATABLE.some((field) => Object.hasOwn(body, field))) {
    throw new InvalidRequestError(`body: at least one of ${UPDATABLE.join(', ')} is required`)
  }
  const type = body.command_type ?? existing.command_type
  const keep = type === existing.command_type
  return {
    name: body.name ?? existing.name,
    description: body.description !== undefined ? body.description : existing.description,
    command_type: type,
    ffmpeg_command: body.ffmpeg_command ?? (keep ? existing.ffmpeg_command : null),
    ffmpeg_commands: body.ffmpeg_commands ?? (keep ? existing.ffmpeg_commands : null),
    input_file_keys: body.input_file_keys ?? existing.input_file_keys,
    output_file_definitions: body.output_file_definitions ?? existing.output_file_definitions,
    metadata: body.metadata !== undefined ? body.metadata : existing.metadata,
  }
}

function checkInputKeys(keys: readonly string[]): void {
  if (keys.length === 0) throw new InvalidRequestError('input_file_keys: at least one in_* alias is required')
  for (const key of keys) {
    const problem = aliasProblem(key, 'input')
    if (problem) throw new InvalidRequestError(`input_file_keys: "${key}" ${problem}`)
  }
  if (new Set(keys).size !== keys.length) throw new InvalidRequestError('input_file_keys: aliases must be distinct')
}

/** The commands of the definition, after the type-specific presence rules (422 when the type's command is missing). */
function commandsOf(def: UncheckedDefinition): string[] {
  if (def.command_type === 'FFMPEG_COMMAND') {
    if (def.ffmpeg_commands !== null) throw new InvalidRequestError('ffmpeg_commands: only for CHAINED_COMMAND and MULTIPLE_COMMAND presets')
    if (def.ffmpeg_command === null) throw new ValidationError('ffmpeg_command: required when command_type is FFMPEG_COMMAND')
    return [def.ffmpeg_command]
  }
  if (def.ffmpeg_command !== null) throw new InvalidRequestError(`ffmpeg_command: not used by ${def.command_type} presets; use ffmpeg_commands`)
  if (def.ffmpeg_commands === null || def.ffmpeg_commands.length === 0) {
    throw new ValidationError(`ffmpeg_commands: required (1 to 10 commands) when command_type is ${def.command_type}`)
  }
  checkCommandCount(def.ffmpeg_commands.length, 'ffmpeg_commands')
  return def.ffmpeg_commands
}

/**
 * MULTIPLE_COMMAND presets: each command runs in its own sandbox, so each
 * declared output must be written by exactly one of them, and each must
 * write at least one.
 */
function checkMultipleOutputs(commands: readonly string[], outputs: Record<string, string>): void {
  const writer = new Map<string, number>()
  commands.forEach((command, i) => {
    const written = referencedAliases(command).filter((alias) => Object.hasOwn(outputs, alias))
    if (written.length === 0) throw new InvalidRequestError(`ffmpeg_commands[${i}]: writes no declared output`)
    for (const alias of written) {
      const other = writer.get(alias)
      if (other !== undefined) throw new InvalidRequestError(`ffmpeg_commands[${i}]: output ${alias} is already written by ffmpeg_commands[${other}]`)
      writer.set(alias, i)
    }
  })
}

/** The runner's argument policy over the preset's commands, as executing it will run them. */
function checkPresetPolicy(def: UncheckedDefinition, commands: readonly string[]): void {
  const outputs = def.output_file_definitions
  if (def.command_type === 'MULTIPLE_COMMAND') {
    commands.forEach((command, i) => {
      const own = Object.fromEntries(referencedAliases(command).filter((a) => Object.hasOwn(outputs, a)).map((a) => [a, outputs[a]!]))
      checkArgumentPolicy([command], { inputs: def.input_file_keys, outputs: own }, 'ffmpeg', () => `ffmpeg_commands[${i}]`, InvalidRequestError)
    })
    return
  }
  const field = def.command_type === 'FFMPEG_COMMAND' ? () => 'ffmpeg_command' : (i: number | null) => (i === null ? 'ffmpeg_commands' : `ffmpeg_commands[${i}]`)
  checkArgumentPolicy(commands, { inputs: def.input_file_keys, outputs }, 'ffmpeg', field, InvalidRequestError)
}

/** Checks a whole definition (create and update alike) and returns it with its metadata typed. */
export function checkPresetDefinition(def: UncheckedDefinition): PresetDefinition {
  const commands = commandsOf(def)
  checkInputKeys(def.input_file_keys)
  if (Object.keys(def.output_file_definitions).length === 0) throw new InvalidRequestError('output_file_definitions: at least one out_* alias is required')
  checkOutputFiles(def.output_file_definitions, 'output_file_definitions', InvalidRequestError)
  const declared = { inputs: def.input_file_keys, outputs: Object.keys(def.output_file_definitions) }
  const field = def.command_type === 'FFMPEG_COMMAND' ? () => 'ffmpeg_command' : (i: number) => `ffmpeg_commands[${i}]`
  commands.forEach((command, i) => checkFfmpegCommand(command, field(i), declared, InvalidRequestError))
  if (def.command_type === 'MULTIPLE_COMMAND') checkMultipleOutputs(commands, def.output_file_definitions)
  else checkOutputsUsed(commands, def.output_file_definitions, 'output_file_definitions', InvalidRequestError)
  checkPresetPolicy(def, commands)
  return { ...def, metadata: checkMetadata(def.metadata) }
}

/**
 * The drafts executing a preset creates: input keys must equal the preset's
 * exactly, metadata merges over the preset's (at most 10 keys after merging);
 * every fault is 422.
 */
export function draftsForExecution(preset: PresetDefinition, body: ExecutePresetBody): CommandDraft[] {
  const given = Object.keys(body.input_files)
  const missing = preset.input_file_keys.filter((key) => !given.includes(key))
  const extra = given.filter((key) => !preset.input_file_keys.includes(key))
  if (missing.length > 0 || extra.length > 0) {
    const parts = [missing.length ? `missing ${missing.join(', ')}` : '', extra.length ? `unexpected ${extra.join(', ')}` : ''].filter(Boolean)
    throw new ValidationError(`input_files: keys must equal the preset's input_file_keys (${preset.input_file_keys.join(', ')}): ${parts.join('; ')}`)
  }
  const own = checkMetadata(body.metadata)
  const merged = preset.metadata || own ? { ...preset.metadata, ...own } : null
  if (merged && Object.keys(merged).length > MAX_METADATA_KEYS) {
    throw new ValidationError(`metadata: at most ${MAX_METADATA_KEYS} keys are allowed after merging with the preset's, got ${Object.keys(merged).length}`)
  }
  const common = { input_files: body.input_files, metadata: merged, ...(body.webhook_url !== undefined ? { webhook_url: body.webhook_url } : {}), ...requestedLimits(body) }
  const options = { Fault: ValidationError }
  if (preset.command_type === 'FFMPEG_COMMAND') {
    return [draftFfmpegCommand({ ...common, output_files: preset.output_file_definitions, ffmpeg_command: preset.ffmpeg_command! }, options)]
  }
  if (preset.command_type === 'CHAINED_COMMAND') {
    return [draftChained({ ...common, output_files: preset.output_file_definitions, ffmpeg_commands: preset.ffmpeg_commands! })]
  }
  return preset.ffmpeg_commands!.map((command) => {
    const written = referencedAliases(command).filter((alias) => Object.hasOwn(preset.output_file_definitions, alias))
    const outputs = Object.fromEntries(written.map((alias) => [alias, preset.output_file_definitions[alias]!]))
    return draftFfmpegCommand({ ...common, output_files: outputs, ffmpeg_command: command }, { ...options, commandType: 'MULTIPLE_COMMAND' })
  })
}
