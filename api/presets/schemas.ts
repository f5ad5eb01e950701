import { Type, type Static } from 'typebox'
import { LimitFields } from '../commands/command-limits.js'
import { AliasMap, FFMPEG_COMMAND_RULE, FfmpegCommand, MAX_COMMANDS, Metadata } from '../commands/schemas.js'
import { answersWith } from '../validation/error-status.js'
import { HttpUrl, InputUrlMap, Nullable, OutputFileMap, SubmittedMetadata } from '../validation/field-schemas.js'
import { INPUT_ALIAS_PATTERN } from '../../contracts/placeholders.js'
import { PageOf, PageQuery } from '../pagination.js'

export const PRESET_COMMAND_TYPES = ['FFMPEG_COMMAND', 'CHAINED_COMMAND', 'MULTIPLE_COMMAND'] as const
export type PresetCommandType = (typeof PRESET_COMMAND_TYPES)[number]

/** The spec's PresetResponse. */
export const PresetResponse = Type.Object({
  preset_id: Type.String(),
  name: Type.String(),
  description: Nullable(Type.String()),
  is_system: Type.Boolean(),
  command_type: Type.Enum([...PRESET_COMMAND_TYPES]),
  ffmpeg_command: Nullable(Type.String()),
  ffmpeg_commands: Nullable(Type.Array(Type.String())),
  input_file_keys: Type.Array(Type.String()),
  output_file_definitions: AliasMap,
  metadata: Nullable(Metadata),
  created_at: Type.String({ format: 'date-time' }),
  updated_at: Type.String({ format: 'date-time' }),
})
export type PresetResponse = Static<typeof PresetResponse>

const Name = Type.String({ minLength: 1, maxLength: 200 })
const Description = Nullable(Type.String({ maxLength: 2000 }))
/** Too many commands is 422; a malformed one inside stays the route's 400. */
const FfmpegCommands = Type.Array(Type.String({ ...FfmpegCommand, ...answersWith(400) }), {
  minItems: 1,
  maxItems: MAX_COMMANDS,
  description: `required for CHAINED_COMMAND and MULTIPLE_COMMAND; at most ${MAX_COMMANDS}`,
  ...answersWith(422),
})
const InputFileKeys = Type.Array(Type.String({ pattern: INPUT_ALIAS_PATTERN, description: 'must start with "in_" followed by 1 to 61 letters, digits or underscores' }), { minItems: 1, maxItems: 50, uniqueItems: true, description: 'the in_* aliases execute expects' })

export const CreatePresetBody = Type.Object(
  {
    name: Name,
    description: Type.Optional(Description),
    command_type: Type.Optional(Type.Enum([...PRESET_COMMAND_TYPES], { default: 'FFMPEG_COMMAND' })),
    ffmpeg_command: Type.Optional(Type.String({ ...FfmpegCommand, description: `${FFMPEG_COMMAND_RULE}; required for FFMPEG_COMMAND` })),
    ffmpeg_commands: Type.Optional(FfmpegCommands),
    input_file_keys: InputFileKeys,
    output_file_definitions: OutputFileMap,
    metadata: Type.Optional(SubmittedMetadata),
  },
  { additionalProperties: false },
)
export type CreatePresetBody = Static<typeof CreatePresetBody>

const UPDATABLE_FIELDS = ['name', 'description', 'command_type', 'ffmpeg_command', 'ffmpeg_commands', 'input_file_keys', 'output_file_definitions', 'metadata']

/** Any subset of the creation fields; at least one. */
export const UpdatePresetBody = Type.Object(
  {
    name: Type.Optional(Name),
    description: Type.Optional(Description),
    command_type: Type.Optional(Type.Enum([...PRESET_COMMAND_TYPES])),
    ffmpeg_command: Type.Optional(FfmpegCommand),
    ffmpeg_commands: Type.Optional(FfmpegCommands),
    input_file_keys: Type.Optional(InputFileKeys),
    output_file_definitions: Type.Optional(OutputFileMap),
    metadata: Type.Optional(SubmittedMetadata),
  },
  { additionalProperties: false, minProperties: 1, description: `must have at least one of ${UPDATABLE_FIELDS.join(', ')}` },
)
export type UpdatePresetBody = Static<typeof UpdatePresetBody>

/** Validated with status 422: execute's error list has no 400. */
export const ExecutePresetBody = Type.Object(
  {
    input_files: InputUrlMap,
    metadata: Type.Optional(SubmittedMetadata),
    webhook_url: Type.Optional(HttpUrl('must be an http(s) URL (Business plan)')),
    ...LimitFields,
  },
  { additionalProperties: false },
)
export type ExecutePresetBody = Static<typeof ExecutePresetBody>

export const ExecutePresetResponse = Type.Object({
  command_id: Type.String(),
  command_ids: Type.Optional(Type.Array(Type.String(), { description: 'MULTIPLE_COMMAND presets: every command, command_id being the first' })),
})

export const PresetParams = Type.Object({ presetId: Type.String() })
export const ListPresetsQuery = PageQuery
export const PresetListResponse = PageOf('presets', PresetResponse)
export const DeletePresetResponse = Type.Object({ deleted: Type.Literal(true), preset_id: Type.String() })
