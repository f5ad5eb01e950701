import { Type, type Static } from 'typebox'
import { AliasMap, Metadata, SubmittedMetadata } from '../commands/schemas.js'
import { PageQuery } from '../pagination.js'

export const PRESET_COMMAND_TYPES = ['FFMPEG_COMMAND', 'CHAINED_COMMAND', 'MULTIPLE_COMMAND'] as const
export type PresetCommandType = (typeof PRESET_COMMAND_TYPES)[number]

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) => Type.Union([schema, Type.Null()])

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

export const CreatePresetBody = Type.Object({
  name: Name,
  description: Type.Optional(Description),
  command_type: Type.Optional(Type.Enum([...PRESET_COMMAND_TYPES], { default: 'FFMPEG_COMMAND' })),
  ffmpeg_command: Type.Optional(Type.String({ description: 'required for FFMPEG_COMMAND' })),
  ffmpeg_commands: Type.Optional(Type.Array(Type.String(), { description: 'required for CHAINED_COMMAND and MULTIPLE_COMMAND; at most 10' })),
  input_file_keys: Type.Array(Type.String(), { description: 'the in_* aliases execute expects' }),
  output_file_definitions: AliasMap,
  metadata: Type.Optional(SubmittedMetadata),
})
export type CreatePresetBody = Static<typeof CreatePresetBody>

/** Any subset of the creation fields; at least one (checked in code, for a message that lists them). */
export const UpdatePresetBody = Type.Object({
  name: Type.Optional(Name),
  description: Type.Optional(Description),
  command_type: Type.Optional(Type.Enum([...PRESET_COMMAND_TYPES])),
  ffmpeg_command: Type.Optional(Type.String()),
  ffmpeg_commands: Type.Optional(Type.Array(Type.String())),
  input_file_keys: Type.Optional(Type.Array(Type.String())),
  output_file_definitions: Type.Optional(AliasMap),
  metadata: Type.Optional(SubmittedMetadata),
})
export type UpdatePresetBody = Static<typeof UpdatePresetBody>

/** Validated with status 422: execute's error list has no 400. */
export const ExecutePresetBody = Type.Object({
  input_files: AliasMap,
  metadata: Type.Optional(SubmittedMetadata),
  webhook_url: Type.Optional(Type.String({ description: 'Business plan' })),
})
export type ExecutePresetBody = Static<typeof ExecutePresetBody>

export const ExecutePresetResponse = Type.Object({
  command_id: Type.String(),
  command_ids: Type.Optional(Type.Array(Type.String(), { description: 'MULTIPLE_COMMAND presets: every command, command_id being the first' })),
})

export const PresetParams = Type.Object({ presetId: Type.String() })
export const ListPresetsQuery = PageQuery
export const PresetListResponse = Type.Object({ presets: Type.Array(PresetResponse), limit: Type.Integer(), offset: Type.Integer() })
export const DeletePresetResponse = Type.Object({ deleted: Type.Literal(true), preset_id: Type.String() })
