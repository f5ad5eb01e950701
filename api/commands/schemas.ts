import { Type, type Static } from 'typebox'
import fastJson from 'fast-json-stringify'
import { COMMAND_STATUSES, COMMAND_TYPES } from '../../contracts/command-types.js'
import { FORMAT_SELECTORS } from '../../contracts/command-spec.js'
import { PageOf, PageQuery } from '../pagination.js'
import { FILE_STATUSES, FileMembersFields, STORE_TYPES } from '../files/schemas.js'
import { LimitFields } from './command-limits.js'
import { answersWith } from '../validation/error-status.js'
import { HttpUrl, InputUrlMap, MAX_FILES_PER_MAP, Nullable, OutputFileMap, SubmittedMetadata } from '../validation/field-schemas.js'
import { STORAGE_DESTINATION_ID_PATTERN } from '../storage-destinations/storage-destination-id.js'

/** `in_*` alias → URL, or `out_*` alias → filename, as stored and returned. Submitted maps use InputUrlMap and OutputFileMap. */
export const AliasMap = Type.Record(Type.String(), Type.String())

export const Metadata = Type.Record(Type.String(), Type.Union([Type.String(), Type.Number(), Type.Boolean()]))
export type Metadata = Static<typeof Metadata>

/** Longest command string: a bound that keeps one record well inside MongoDB's 16 MiB document. */
export const MAX_COMMAND_LENGTH = 16_384
/** Commands per chained request and per multiple request. */
export const MAX_COMMANDS = 10

/**
 * A command string of the FFmpeg endpoints: the word `ffmpeg`, then arguments.
 * Its placeholders and options are checked in code against the declared
 * aliases and the runner's argument policy (rules across fields, which JSON
 * Schema cannot state).
 */
/** Spaces and tabs only: JavaScript's and Python's `\\s` disagree on a few control characters, and the fuzzer generates from the pattern in Python. */
export const FFMPEG_COMMAND_PATTERN = '^[ \\t]*ffmpeg[ \\t]+[^ \\t]'
export const FFMPEG_COMMAND_RULE = 'must begin with "ffmpeg" and arguments; files by placeholder, e.g. {{in_video}} or <<out_mp4>>'
export const FfmpegCommand = Type.String({
  minLength: 1,
  maxLength: MAX_COMMAND_LENGTH,
  pattern: FFMPEG_COMMAND_PATTERN,
  description: FFMPEG_COMMAND_RULE,
})

/** The optional fields every command endpoint accepts. */
const CommonFields = {
  metadata: Type.Optional(SubmittedMetadata),
  webhook_url: Type.Optional(HttpUrl('must be an http(s) URL (Business plan; overrides the account webhook for this command)')),
  storage_destination_id: Type.Optional(
    Type.String({ pattern: STORAGE_DESTINATION_ID_PATTERN, description: 'Business plan; sd_ followed by 32 hex characters', ...answersWith(422) }),
  ),
  ...LimitFields,
}

/**
 * A zip whose files are unpacked into the work directory before the first
 * command (runner-image/runner/fetch/compressed-folder.ts). With it,
 * input_files may be left out: a command may read the folder's files alone.
 */
export const InputCompressedFolder = HttpUrl(
  'the http(s) URL of a zip (or a storage_url of this service) unpacked into the work directory before the first command; commands name its files by their relative paths (frames/img_%03d.png, list.txt). Caps by plan on its uncompressed size, compression ratio and entry count',
)

/**
 * Outputs delivered as zips: `true`, every output in one `outputs.zip`
 * (reported as `out_all`); or a list of declared `out_*` aliases, each stored
 * as `<alias>.zip`. An empty list, duplicates and undeclared aliases are
 * checked in code (validation.ts), with the endpoint's status and a message
 * that says which.
 */
export const CompressOutputs = Type.Union([Type.Literal(true), Type.Array(Type.String(), { maxItems: MAX_FILES_PER_MAP })], {
  description:
    'must be true (every output in one zip, outputs.zip, reported as out_all) or a list of declared out_* aliases (each stored as one zip, <alias>.zip, holding its files)',
})
export type CompressOutputs = Static<typeof CompressOutputs>

/** input_files is required, unless the command brings an input_compressed_folder (checked in code: JSON Schema cannot say "unless"). */
const InputFilesUnlessFolder = Type.Optional({ ...InputUrlMap, description: 'map of in_* alias to http(s) URL; required unless input_compressed_folder is given' })

export const RunFfmpegCommandBody = Type.Object(
  {
    input_files: InputFilesUnlessFolder,
    input_compressed_folder: Type.Optional(InputCompressedFolder),
    output_files: OutputFileMap,
    compress_outputs: Type.Optional(CompressOutputs),
    ffmpeg_command: FfmpegCommand,
    ...CommonFields,
  },
  { additionalProperties: false },
)
export type RunFfmpegCommandBody = Static<typeof RunFfmpegCommandBody>

export const RunChainedBody = Type.Object(
  {
    input_files: InputFilesUnlessFolder,
    input_compressed_folder: Type.Optional(InputCompressedFolder),
    output_files: OutputFileMap,
    compress_outputs: Type.Optional(CompressOutputs),
    // Too many commands is 422; a malformed one inside stays 400.
    ffmpeg_commands: Type.Array(Type.String({ ...FfmpegCommand, ...answersWith(400) }), {
      minItems: 1,
      maxItems: MAX_COMMANDS,
      description: `at most ${MAX_COMMANDS}, run in order in one sandbox`,
      ...answersWith(422),
    }),
    ...CommonFields,
  },
  { additionalProperties: false },
)
export type RunChainedBody = Static<typeof RunChainedBody>

/** Every fault inside an element is 422 "invalid command structure", as the spec lists it. */
export const RunMultipleBody = Type.Object(
  {
    commands: Type.Array(RunFfmpegCommandBody, {
      minItems: 1,
      maxItems: MAX_COMMANDS,
      description: `at most ${MAX_COMMANDS} run-ffmpeg-command bodies, run in parallel`,
      ...answersWith(422),
    }),
  },
  { additionalProperties: false },
)
export type RunMultipleBody = Static<typeof RunMultipleBody>

/** yt-dlp post-processing: FFmpeg arguments only (a leading "ffmpeg" word is tolerated). */
const YtdlpFfmpegArguments = Type.String({
  minLength: 1,
  maxLength: MAX_COMMAND_LENGTH,
  pattern: '[^ \\t]',
  description: 'FFmpeg arguments only; a leading "ffmpeg" word is tolerated',
})

/** Named so the refusal says why, rather than "not a known field". */
const NotAccepted = Type.Never({ description: 'must not be sent: ytdlp-download does not post-process; use run-ytdlp-command' })

/** Validated with status 422 (the yt-dlp endpoints list no 400). */
export const YtdlpDownloadBody = Type.Object(
  {
    input_urls: InputUrlMap,
    format_selector: Type.Optional(Type.Enum([...FORMAT_SELECTORS], { default: 'best' })),
    ffmpeg_command: Type.Optional(NotAccepted),
    output_files: Type.Optional(NotAccepted),
    ...CommonFields,
  },
  { additionalProperties: false },
)
export type YtdlpDownloadBody = Static<typeof YtdlpDownloadBody>

export const RunYtdlpCommandBody = Type.Object(
  {
    input_urls: InputUrlMap,
    format_selector: Type.Optional(Type.Enum([...FORMAT_SELECTORS], { default: 'best' })),
    ffmpeg_command: Type.Optional(YtdlpFfmpegArguments),
    output_files: Type.Optional(OutputFileMap),
    ...CommonFields,
  },
  { additionalProperties: false },
)
export type RunYtdlpCommandBody = Static<typeof RunYtdlpCommandBody>

export const CommandIdResponse = Type.Object({ command_id: Type.String() })
export const CommandIdsResponse = Type.Object({ command_ids: Type.Array(Type.String()) })

export const CommandParams = Type.Object({ commandId: Type.String() })

export const ListCommandsQuery = Type.Object({
  ...PageQuery.properties,
  status: Type.Optional(Type.Enum([...COMMAND_STATUSES])),
})
export type ListCommandsQuery = Static<typeof ListCommandsQuery>

/**
 * The spec's OutputFileMeta, plus file_count and files. For a multi-file
 * output the other fields describe its main file (the playlist, the master
 * playlist, else the first file), except size_mbytes, the total.
 */
export const OutputFileMeta = Type.Object({
  file_id: Type.String(),
  filename: Type.String(),
  storage_url: Nullable(
    Type.String({
      description:
        'managed download URL (presigned, 7 days), or the public URL of an external destination; null for a private external bucket. For an HLS or DASH output, the URL a player opens without credentials: in managed storage a copy of the playlist whose entries are presigned URLs',
    }),
  ),
  storage_location: Type.Enum(['INTERNAL', 'EXTERNAL']),
  external_uri: Nullable(Type.String()),
  external_object_key: Nullable(Type.String()),
  status: Type.Enum([...FILE_STATUSES]),
  service_store_type: Type.Enum([...STORE_TYPES]),
  is_deleted: Type.Boolean(),
  size_mbytes: Nullable(Type.Number()),
  duration: Nullable(Type.Number()),
  file_type: Nullable(Type.String()),
  file_format: Nullable(Type.String()),
  codec: Nullable(Type.String()),
  pixel_format: Nullable(Type.String()),
  mime_type: Nullable(Type.String()),
  width: Nullable(Type.Number()),
  height: Nullable(Type.Number()),
  frame_rate: Nullable(Type.Number()),
  bitrate_video_kb: Nullable(Type.Number()),
  bitrate_audio_kb: Nullable(Type.Number()),
  ...FileMembersFields,
})
export type OutputFileMeta = Static<typeof OutputFileMeta>

export const FailedFile = Type.Object({ url: Type.String(), error_status: Type.String(), error_message: Type.String() })
export type FailedFile = Static<typeof FailedFile>

export const OriginalRequest = Type.Object({
  input_files: AliasMap,
  input_compressed_folder: Type.Optional(Type.String({ description: 'as submitted, when the command brought one' })),
  output_files: AliasMap,
  compress_outputs: Type.Optional(CompressOutputs),
  ffmpeg_command: Type.Optional(Type.String()),
  ffmpeg_commands: Type.Optional(Type.Array(Type.String())),
})
export type OriginalRequest = Static<typeof OriginalRequest>

/** The spec's CommandPollResponse, field for field. */
export const CommandPollResponse = Type.Object({
  command_id: Type.String(),
  status: Type.Enum([...COMMAND_STATUSES]),
  command_type: Type.Enum([...COMMAND_TYPES]),
  total_processing_seconds: Nullable(Type.Number()),
  ffmpeg_command_run_seconds: Nullable(Type.Number()),
  metadata: Nullable(Metadata),
  error_status: Nullable(Type.String()),
  error_message: Nullable(Type.String()),
  output_files: Type.Optional(Type.Record(Type.String(), OutputFileMeta, { description: 'present when status is SUCCESS' })),
  failed_files: Type.Optional(Type.Record(Type.String(), FailedFile, { description: 'download-only batches with partial failure' })),
  original_request: OriginalRequest,
  progress: Nullable(
    Type.Number({ minimum: 0, maximum: 100, description: 'percent of the whole command while PROCESSING (null when not known yet, e.g. an input without a duration); 100 on SUCCESS; null while QUEUED and on FAILED' }),
  ),
  processing_stage: Nullable(Type.String({ description: 'while PROCESSING: FETCHING, DOWNLOADING, RUNNING, PROBING or UPLOADING; null in every other status' })),
})
export type CommandPollResponse = Static<typeof CommandPollResponse>

/**
 * A poll response's JSON text as `GET /commands/:id` sends it: Fastify's own
 * serializer (fast-json-stringify, no options) compiled once from the same
 * schema, for the writers that have no route to borrow it from. The webhook's
 * `data` and the event stream's events must be byte-for-byte that body.
 */
export const stringifyPollResponse: (poll: CommandPollResponse) => string = fastJson(CommandPollResponse)

export const CommandListResponse = PageOf('commands', CommandPollResponse)

export const DeleteCommandFilesResponse = Type.Object({ deleted: Type.Literal(true), files_deleted: Type.Integer() })

/** POST /commands/:commandId/cancel: the command and the status it ends with (FAILED, error_status CANCELLED). */
export const CancelCommandResponse = Type.Object({
  command_id: Type.String(),
  status: Type.Enum([...COMMAND_STATUSES], { description: 'FAILED: the status the cancelled command ends with (GET shows it once the cancel is applied, normally within a second)' }),
})
