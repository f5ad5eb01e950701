/**
 * Turns each command endpoint's body into CommandDrafts: validated, with the
 * spec's status per fault, in the shape the record and the runner need.
 * Pure: plan gates and storage destinations are checked by submission.ts.
 */
import { Compile } from 'typebox/compile'
import type { FfmpegPlanner } from '../../contracts/ffmpeg-plan.js'
import type { CommandType } from '../../contracts/command-types.js'
import type { CompressOutputs } from '../../contracts/compressed-outputs.js'
import type { FormatSelector } from '../../contracts/command-spec.js'
import { InvalidRequestError, ValidationError } from '../errors/api-errors.js'
import type { Metadata, OriginalRequest, RunChainedBody, RunFfmpegCommandBody, RunMultipleBody, RunYtdlpCommandBody, YtdlpDownloadBody } from './schemas.js'
import { RunFfmpegCommandBody as RunFfmpegCommandSchema } from './schemas.js'
import { requestedLimits, type RequestedLimits } from './command-limits.js'
import { unavailableVideos } from './video-urls.js'
import {
  checkArgumentPolicy,
  checkCommandCount,
  checkCompressOutputs,
  checkFfmpegCommand,
  checkInputAliases,
  checkInputUrls,
  checkMetadata,
  checkOutputFiles,
  checkOutputsUsed,
  checkUrl,
  ytdlpFfmpegArguments,
  type ApiErrorClass,
} from './validation.js'

/** One command to record, before it has an id. */
export interface CommandDraft {
  command_type: CommandType
  /** `in_*` → URL: the files to fetch (FFmpeg endpoints) or the videos to download (yt-dlp). */
  input_files: Record<string, string>
  /** `out_*` → filename; empty for download-only yt-dlp commands, whose outputs are `out_<suffix>`. */
  output_files: Record<string, string>
  /** What the runner runs: full command strings, or yt-dlp's post-processing arguments. */
  ffmpeg_commands: string[]
  ytdlp: { format_selector: FormatSelector } | null
  metadata: Metadata | null
  webhook_url: string | null
  storage_destination_id: string | null
  original_request: OriginalRequest
  /** input_compressed_folder: the zip's URL; absent when the command brings none. */
  input_compressed_folder?: string
  /** compress_outputs as sent (contracts/compressed-outputs.ts); absent when the body has none. */
  compress_outputs?: CompressOutputs
  /** max_command_run_seconds and vcpu_count as sent; submission resolves them against the plan. */
  requested_limits?: RequestedLimits
}

/** The fields every command body shares, after their 422 checks. */
function commonFields(body: { metadata?: unknown; webhook_url?: string | undefined; storage_destination_id?: string | undefined } & RequestedLimits, prefix: string) {
  return {
    requested_limits: requestedLimits(body),
    metadata: checkMetadata(body.metadata, `${prefix}metadata`),
    // Checked with the account webhook's rule, which needs ALLOW_PRIVATE_NETWORKS (submission.ts).
    webhook_url: body.webhook_url ?? null,
    // Its format, plan, existence and state are checked against the repository (submission.ts).
    storage_destination_id: body.storage_destination_id ?? null,
  }
}

/**
 * input_files and input_compressed_folder of an FFmpeg body: input_files is
 * required unless a folder comes (a command may read the folder alone). The
 * folder URL is 422 like input URLs; missing inputs are `Fault`.
 */
function inputsAndFolder(
  body: { input_files?: Record<string, string> | undefined; input_compressed_folder?: string | undefined },
  prefix: string,
  Fault: ApiErrorClass,
): { inputs: Record<string, string>; folder: string | null } {
  const folder = body.input_compressed_folder ?? null
  if (body.input_files === undefined && folder === null) throw new Fault(`${prefix}input_files is required (unless input_compressed_folder is given)`)
  const inputs = body.input_files ?? {}
  if (body.input_files !== undefined) checkInputAliases(inputs, `${prefix}input_files`, Fault)
  return { inputs, folder }
}

/** The URL checks of an FFmpeg body's inputs and folder: 422 on every endpoint. */
function checkInputLocations(inputs: Record<string, string>, folder: string | null, prefix: string): void {
  checkInputUrls(inputs, `${prefix}input_files`)
  if (folder !== null) checkUrl(folder, `${prefix}input_compressed_folder`)
}

/** What the request asked, as GET returns it: the folder and compress_outputs only when sent. */
function originalFiles(inputs: Record<string, string>, folder: string | null, outputs: Record<string, string>, compress: CompressOutputs | null): OriginalRequest {
  return {
    input_files: inputs,
    ...(folder !== null ? { input_compressed_folder: folder } : {}),
    output_files: outputs,
    ...(compress !== null ? { compress_outputs: compress } : {}),
  }
}

/** The draft's compress_outputs field, present only when sent. */
function compressField(compress: CompressOutputs | null): { compress_outputs?: CompressOutputs } {
  return compress !== null ? { compress_outputs: compress } : {}
}

/**
 * run-ffmpeg-command, and each element of run-multiple-ffmpeg-commands.
 * Structure faults are `Fault` (400 alone, 422 inside a multiple request);
 * URLs, metadata and webhook faults are 422 everywhere.
 */
export function draftFfmpegCommand(
  body: RunFfmpegCommandBody,
  options: { prefix?: string; Fault?: ApiErrorClass; commandType?: CommandType; ffmpegPlanner?: FfmpegPlanner | undefined } = {},
): CommandDraft {
  const { prefix = '', Fault = InvalidRequestError, commandType = 'FFMPEG_COMMAND' } = options
  const { inputs, folder } = inputsAndFolder(body, prefix, Fault)
  checkOutputFiles(body.output_files, `${prefix}output_files`, Fault)
  const declared = { inputs: Object.keys(inputs), outputs: Object.keys(body.output_files) }
  checkFfmpegCommand(body.ffmpeg_command, `${prefix}ffmpeg_command`, declared, Fault)
  checkOutputsUsed([body.ffmpeg_command], body.output_files, `${prefix}output_files`, Fault)
  const compress = checkCompressOutputs(body.compress_outputs, body.output_files, `${prefix}compress_outputs`, Fault)
  checkInputLocations(inputs, folder, prefix)
  checkArgumentPolicy([body.ffmpeg_command], { inputs, outputs: body.output_files, folder: folder !== null }, 'ffmpeg', () => `${prefix}ffmpeg_command`, Fault, options.ffmpegPlanner)
  return {
    command_type: commandType,
    input_files: inputs,
    ...(folder !== null ? { input_compressed_folder: folder } : {}),
    output_files: body.output_files,
    ...compressField(compress),
    ffmpeg_commands: [body.ffmpeg_command],
    ytdlp: null,
    ...commonFields(body, prefix),
    original_request: { ...originalFiles(inputs, folder, body.output_files, compress), ffmpeg_command: body.ffmpeg_command },
  }
}

/** run-chained-ffmpeg-commands: up to 10 strings sharing one set of aliases and one sandbox. */
export function draftChained(body: RunChainedBody): CommandDraft {
  checkCommandCount(body.ffmpeg_commands.length, 'ffmpeg_commands')
  const { inputs, folder } = inputsAndFolder(body, '', InvalidRequestError)
  checkOutputFiles(body.output_files, 'output_files', InvalidRequestError)
  const declared = { inputs: Object.keys(inputs), outputs: Object.keys(body.output_files) }
  // A later command may read a plain filename an earlier one wrote: that needs no placeholder, so nothing to check here.
  body.ffmpeg_commands.forEach((command, i) => checkFfmpegCommand(command, `ffmpeg_commands[${i}]`, declared, InvalidRequestError))
  checkOutputsUsed(body.ffmpeg_commands, body.output_files, 'output_files', InvalidRequestError)
  const compress = checkCompressOutputs(body.compress_outputs, body.output_files, 'compress_outputs', InvalidRequestError)
  checkInputLocations(inputs, folder, '')
  const field = (i: number | null) => (i === null ? 'ffmpeg_commands' : `ffmpeg_commands[${i}]`)
  checkArgumentPolicy(body.ffmpeg_commands, { inputs, outputs: body.output_files, folder: folder !== null }, 'ffmpeg', field, InvalidRequestError)
  return {
    command_type: 'CHAINED_COMMAND',
    input_files: inputs,
    ...(folder !== null ? { input_compressed_folder: folder } : {}),
    output_files: body.output_files,
    ...compressField(compress),
    ffmpeg_commands: body.ffmpeg_commands,
    ytdlp: null,
    ...commonFields(body, ''),
    original_request: { ...originalFiles(inputs, folder, body.output_files, compress), ffmpeg_commands: body.ffmpeg_commands },
  }
}

const checkRunFfmpegBody = Compile(RunFfmpegCommandSchema)

interface SchemaIssue {
  keyword: string
  instancePath: string
  params: { requiredProperties?: string[] }
  message: string
}

/** TypeBox's first meaningful error as "field: reason". */
function describeIssue(errors: readonly SchemaIssue[], prefix: string): string {
  const issue = errors.find((e) => e.keyword === 'anyOf') ?? errors.find((e) => e.keyword !== 'boolean') ?? errors[0]
  if (!issue) return `${prefix.replace(/\.$/, '')}: is invalid`
  const path = issue.instancePath.replace(/^\//, '').replaceAll('/', '.')
  const missing = issue.params.requiredProperties?.[0]
  if (issue.keyword === 'required' && missing) return `${prefix}${path ? `${path}.` : ''}${missing}: is required`
  return `${prefix}${path || prefix.replace(/\.$/, '')}: ${issue.message}`
}

/**
 * run-multiple-ffmpeg-commands: each element is a run-ffmpeg-command body
 * whose faults are all 422 ("invalid command structure"); only a body without
 * a `commands` array is 400.
 */
export function draftMultiple(body: RunMultipleBody): CommandDraft[] {
  checkCommandCount(body.commands.length, 'commands')
  return body.commands.map((element, i) => {
    const prefix = `commands[${i}].`
    if (typeof element !== 'object' || element === null || Array.isArray(element)) {
      throw new ValidationError(`commands[${i}]: must be an object with input_files, output_files and ffmpeg_command`)
    }
    if (!checkRunFfmpegBody.Check(element)) {
      throw new ValidationError(describeIssue(checkRunFfmpegBody.Errors(element) as SchemaIssue[], prefix))
    }
    return draftFfmpegCommand(element, { prefix, Fault: ValidationError, commandType: 'MULTIPLE_COMMAND' })
  })
}

/** Fields a body must not carry on this endpoint (422, as ytdlp-download's list says). */
function refuseFields(body: object, fields: readonly string[], reason: string): void {
  for (const field of fields) {
    if (Object.hasOwn(body, field)) throw new ValidationError(`${field}: ${reason}`)
  }
}

/** The URL rules, then the spec's submit-time rejection of obviously unavailable videos, listing every one. */
function checkVideoUrls(inputUrls: Record<string, string>): void {
  checkInputUrls(inputUrls, 'input_urls')
  const unavailable = unavailableVideos(inputUrls, 'input_urls')
  if (unavailable) throw new ValidationError(unavailable)
}

/** ytdlp-download: each URL downloaded on its own; every fault is 422. */
export function draftYtdlpDownload(body: YtdlpDownloadBody): CommandDraft {
  refuseFields(body, ['ffmpeg_command', 'output_files'], 'is not accepted by ytdlp-download; use run-ytdlp-command to post-process')
  checkInputAliases(body.input_urls, 'input_urls', ValidationError)
  checkVideoUrls(body.input_urls)
  return {
    command_type: 'YTDLP_COMMAND',
    input_files: body.input_urls,
    output_files: {},
    ffmpeg_commands: [],
    ytdlp: { format_selector: body.format_selector ?? 'best' },
    ...commonFields(body, ''),
    original_request: { input_files: body.input_urls, output_files: {} },
  }
}

/**
 * run-ytdlp-command: a download, optionally post-processed by one FFmpeg
 * argument string whose placeholders name `input_urls` and `output_files`
 * keys. Every fault is 422.
 */
export function draftYtdlpCommand(body: RunYtdlpCommandBody): CommandDraft {
  checkInputAliases(body.input_urls, 'input_urls', ValidationError)
  const outputs = body.output_files
  let args: string[] = []
  if (body.ffmpeg_command === undefined) {
    if (outputs !== undefined) throw new ValidationError('output_files: only accepted together with ffmpeg_command')
  } else {
    if (outputs === undefined || Object.keys(outputs).length === 0) {
      throw new ValidationError('output_files: required when ffmpeg_command is present')
    }
    checkOutputFiles(outputs, 'output_files', ValidationError)
    const declared = { inputs: Object.keys(body.input_urls), outputs: Object.keys(outputs) }
    args = [ytdlpFfmpegArguments(body.ffmpeg_command, 'ffmpeg_command', declared)]
    checkOutputsUsed(args, outputs, 'output_files', ValidationError)
    checkArgumentPolicy(args, { inputs: Object.keys(body.input_urls), outputs }, 'arguments', () => 'ffmpeg_command', ValidationError)
  }
  checkVideoUrls(body.input_urls)
  const original: OriginalRequest = { input_files: body.input_urls, output_files: outputs ?? {} }
  if (body.ffmpeg_command !== undefined) original.ffmpeg_command = body.ffmpeg_command
  return {
    command_type: 'YTDLP_COMMAND',
    input_files: body.input_urls,
    output_files: outputs ?? {},
    ffmpeg_commands: args,
    ytdlp: { format_selector: body.format_selector ?? 'best' },
    ...commonFields(body, ''),
    original_request: original,
  }
}
