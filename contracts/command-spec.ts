import type { CommandType } from './command-types.js'

/** yt-dlp's `format_selector` values, as the spec lists them. */
export const FORMAT_SELECTORS = ['best', '2160p', '1440p', '1080p', '720p', '480p', '360p', 'audio_only', 'worst'] as const
export type FormatSelector = (typeof FORMAT_SELECTORS)[number]

/** Where a command's outputs go when it names a storage destination: `{prefix}/{command_id}/{filename}` in `bucket`. */
export interface StorageDestinationSpec {
  id: string
  /** An https:// origin (http:// only with ALLOW_PRIVATE_NETWORKS). */
  endpointUrl: string
  region: string
  bucket: string
  /** Without leading or trailing slashes; '' for the bucket's root. */
  prefix: string
  pathStyle: boolean
  /** Outputs' storage_url is `{publicBaseUrl}/{key}`; null for a private bucket. */
  publicBaseUrl: string | null
}

/**
 * Everything the runner needs to run one command, and nothing secret: the API
 * builds it from the command record, an executor hands it to a runner (a
 * child process in local mode, a MediaCommand's spec in Kubernetes mode).
 * Credentials for uploads reach only the upload step, by other means.
 */
export interface CommandSpec {
  commandId: string
  accountId: string
  commandType: CommandType
  /** `in_*` alias → http(s) URL the runner fetches (not ffmpeg). */
  inputFiles: Record<string, string>
  /**
   * The `in_*` aliases whose URL is one of the service's own storage_urls
   * (a presigned GET of the managed bucket), verified by the API at
   * acceptance: the fetch step reads these from the managed storage endpoint
   * it is configured with, without the private-network guard, so a bucket on
   * a private network still serves them. Absent in specs of older records.
   */
  managedInputs?: string[] | undefined
  /**
   * The URL of a zip the fetch step unpacks into the work directory before the
   * first command (the API's input_compressed_folder), or null. A managed
   * storage_url when `managedCompressedFolder` is true (read like managedInputs).
   */
  inputCompressedFolder?: string | null
  managedCompressedFolder?: boolean
  /** `out_*` alias → plain filename in the work directory. */
  outputFiles: Record<string, string>
  /**
   * Outputs delivered as zips (contracts/compressed-outputs.ts): `true`, all
   * in one `outputs.zip` reported as `out_all`; or the aliases each stored as
   * `<alias>.zip`. Absent: every file is stored as it is.
   */
  compressOutputs?: true | string[] | undefined
  /**
   * FFmpeg command strings as submitted, placeholders unresolved: one for
   * FFMPEG_COMMAND and MULTIPLE_COMMAND, up to ten run in order for
   * CHAINED_COMMAND, zero or one (arguments only) for YTDLP_COMMAND.
   */
  ffmpegCommands: string[]
  /** YTDLP_COMMAND only. */
  ytdlp: { inputUrls: Record<string, string>; formatSelector: FormatSelector } | null
  /** Outputs go to this customer bucket instead of managed storage (Business plan). */
  storageDestinationId: string | null
  /**
   * The non-secret description of that bucket, as it was when the command was
   * accepted; null (or absent, from older records) for managed storage. Its
   * credentials travel separately (contracts/destination-credentials.ts).
   */
  storageDestination?: StorageDestinationSpec | null | undefined
  /** ISO 8601; total_processing_seconds counts from here. */
  submittedAt: string
  /** The command's limits, resolved against its plan at acceptance; absent in specs of older records (the executor's defaults apply). */
  limits?: CommandLimits | undefined
  /**
   * Bytes of managed storage the account had left under its plan's storage
   * quota when the command was handed off (contracts/storage-room.ts): the
   * runner stores no managed output beyond it and ends FAILED /
   * STORAGE_QUOTA_EXCEEDED instead. Absent: no quota applies (an unlimited
   * plan, outputs to a storage destination, specs of older records). The
   * API's reservation of the outputs at the end stays the authority, for
   * commands of one account that end together.
   */
  storageRoomBytes?: number | undefined
}

/**
 * Per-command limits (the API's max_command_run_seconds and vcpu_count, and
 * the plan's memory limit). Kubernetes: the Job's activeDeadlineSeconds and
 * the run container's CPU request and limit and memory limit. Local mode: the
 * executor enforces the deadline; see README for what it does with the rest.
 */
export interface CommandLimits {
  /** Whole-command wall time; exceeding it ends the command FAILED / TIMEOUT. */
  maxRunSeconds: number
  /** CPU for the command's tools, in millicores (vcpu_count × 1000). */
  vcpuMillis: number
  /** Memory limit of the run container, in MiB (per plan). */
  memoryMib: number
  /** The caps on an input_compressed_folder (per plan); absent in specs of older records (the runner's defaults apply). */
  folder?: FolderLimits | undefined
  /**
   * Most files the command's outputs may hold together (per plan); a command
   * that writes more ends FAILED / OUTPUT_TOO_MANY_FILES with nothing stored.
   * Absent in specs of older records: DEFAULT_MAX_OUTPUT_FILES applies.
   */
  maxOutputFiles?: number | undefined
}

/**
 * Caps on the zip of an input_compressed_folder, checked from its central
 * directory before anything is written and again while each entry streams
 * out (headers can lie). A zip over one ends FAILED / FOLDER_TOO_LARGE.
 */
export interface FolderLimits {
  /** Total uncompressed bytes of every entry. */
  maxBytes: number
  /** Entries, directories included. */
  maxEntries: number
  /** Uncompressed over compressed size, of the whole zip and of any entry over 1 MiB. */
  maxRatio: number
}

/** The file-count cap of a command whose spec names none (older records). */
export const DEFAULT_MAX_OUTPUT_FILES = 1000
