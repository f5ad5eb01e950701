/**
 * The status events a runner emits about one command, as they travel over
 * NATS JetStream (subject `ffkube.status.<command_id>`, stream FFKUBE_STATUS)
 * or, for the local executor, as JSON lines. Consumers (the status projector,
 * the operator) apply them forward-only; `event_id` is also the JetStream
 * `Nats-Msg-Id`, so a runner that re-sends after a restart changes nothing.
 */
import type { MediaMeta } from './output-file-meta.js'

export const STATUS_STREAM = 'FFKUBE_STATUS'
export const STATUS_SUBJECT_PREFIX = 'ffkube.status'

/** The subject a command's events are published on. */
export function statusSubject(commandId: string): string {
  return `${STATUS_SUBJECT_PREFIX}.${commandId}`
}

/** What the runner is doing while PROCESSING. */
export type ProcessingStage = 'FETCHING' | 'DOWNLOADING' | 'RUNNING' | 'PROBING' | 'UPLOADING'

/**
 * One file of a multi-file output (a numbered sequence, a playlist and its
 * segments, a segment list), as uploaded.
 */
export interface OutputMember {
  /** Its path relative to the command's folder in the bucket, '/'-separated: `seg_001.ts`, `v0/prog.m3u8`. */
  filename: string
  object_key: string
  size_bytes: number
  mime_type: string | null
}

/**
 * One uploaded output, as the runner knows it; the API adds file_id and
 * storage_url. For a multi-file output, `filename` and `object_key` name its
 * main file (the playlist for HLS or DASH, the master playlist when
 * `-master_pl_name` is given, otherwise the first file by name: the first,
 * numbers compared as numbers, that the declared filename's pattern matches,
 * e.g. thumb_001.jpg for thumb_%03d.jpg; see contracts/output-patterns.ts), the media
 * fields are the main file's probe except `size_mbytes`, which is the total of
 * every file, and `files` lists every file, the main one among them.
 */
export interface OutputFileResult extends MediaMeta {
  filename: string
  storage_location: 'INTERNAL' | 'EXTERNAL'
  bucket: string
  object_key: string
  /** Set for a multi-file output only; a single file has none. */
  files?: OutputMember[]
}

/** One URL of a download-only batch that failed while others succeeded. */
export interface FailedFile {
  url: string
  error_status: string
  error_message: string
}

interface EventBase {
  command_id: string
  /** Idempotency id, equal to the JetStream Nats-Msg-Id. */
  event_id: string
  /** ISO 8601, from the runner's clock. */
  emitted_at: string
}

export interface ProcessingEvent extends EventBase {
  type: 'PROCESSING'
  stage: ProcessingStage
  /** 0–100 over the whole command, null when unknown (e.g. an input without a duration). */
  progress: number | null
}

/**
 * Where a runner's time went, in seconds, when one process ran every phase
 * (local mode; a Job's containers time nothing across containers): `fetch`
 * (the policy check and the inputs, or the downloads), `run` (ffmpeg, the
 * output checks, the probes started) and `deliver` (the probes' end and the
 * uploads, side by side). For the runner's log and the benchmarks; nothing
 * projects it onto the record.
 */
export interface RunnerPhaseSeconds {
  fetch: number
  run: number
  deliver: number
}

export interface SuccessEvent extends EventBase {
  type: 'SUCCESS'
  output_files: Record<string, OutputFileResult>
  ffmpeg_command_run_seconds: number | null
  /** Download-only batches: URLs that failed while at least one succeeded. */
  failed_files: Record<string, FailedFile> | null
  runner_phase_seconds?: RunnerPhaseSeconds
}

export interface FailedEvent extends EventBase {
  type: 'FAILED'
  error_status: string
  error_message: string
  ffmpeg_command_run_seconds: number | null
  failed_files: Record<string, FailedFile> | null
}

export type StatusEvent = ProcessingEvent | SuccessEvent | FailedEvent

/** The event body without its envelope, as a step produces it. */
export type StatusEventBody =
  | Omit<ProcessingEvent, keyof EventBase>
  | Omit<SuccessEvent, keyof EventBase>
  | Omit<FailedEvent, keyof EventBase>

/**
 * The idempotency id of an event: one per terminal outcome, one per stage, and
 * one per whole percent of progress, so a replayed runner produces the same ids.
 */
export function statusEventId(commandId: string, body: StatusEventBody): string {
  switch (body.type) {
    case 'PROCESSING':
      return `${commandId}:PROCESSING:${body.stage}:${body.progress === null ? 'start' : Math.floor(body.progress)}`
    case 'SUCCESS':
    case 'FAILED':
      return `${commandId}:${body.type}`
  }
}

/** A failure the runner could not report itself: it crashed, overran its deadline, or its pod was lost. */
export interface FailureOnRunnersBehalf {
  commandId: string
  errorStatus: string
  errorMessage: string
  /** When the failure was seen; the event's emitted_at. */
  at: Date
}

/**
 * The FAILED event published on the runner's behalf by whoever saw it fail
 * (the local executor, the operator). It is the runner's own FAILED event,
 * with the same event_id and so the same Nats-Msg-Id: if the runner did
 * report, the stream drops this copy and the runner's more precise reason
 * stands; a second copy from a retry is dropped too. Pure.
 */
export function failedEvent(failure: FailureOnRunnersBehalf): FailedEvent {
  const body = { type: 'FAILED' as const, error_status: failure.errorStatus, error_message: failure.errorMessage, ffmpeg_command_run_seconds: null, failed_files: null }
  return { ...body, command_id: failure.commandId, event_id: statusEventId(failure.commandId, body), emitted_at: failure.at.toISOString() }
}

/** Stable error_status values the runner reports (besides SOURCE_LOGIN_REQUIRED from the spec). */
export const RUNNER_ERROR_STATUSES = [
  'INVALID_COMMAND',
  'INPUT_INVALID_URL',
  'INPUT_FORBIDDEN_ADDRESS',
  'INPUT_UNREACHABLE',
  'INPUT_TOO_LARGE',
  'INPUT_TIMEOUT',
  'INPUT_HTTP_STATUS',
  'INPUT_TOO_MANY_REDIRECTS',
  /** input_compressed_folder is not a zip the runner can read (corrupt, encrypted, an unsupported compression, no files). */
  'FOLDER_INVALID',
  /** input_compressed_folder is over a cap of its plan: uncompressed bytes, compression ratio or entry count. */
  'FOLDER_TOO_LARGE',
  /** An entry of input_compressed_folder is unsafe to unpack: `..`, an absolute name, a link, a reserved name. */
  'FOLDER_UNSAFE_ENTRY',
  /** A playlist or concat list of input_compressed_folder names something outside the folder (a protocol, an absolute path, `..`). */
  'FOLDER_UNSAFE_PLAYLIST',
  'FFMPEG_FAILED',
  'FFMPEG_TIMEOUT',
  'DOWNLOAD_FAILED',
  'DOWNLOAD_TOO_LARGE',
  /** yt-dlp: the site asked for a bot check (YouTube's "confirm you're not a bot", a Cloudflare challenge, HTTP 429). */
  'SOURCE_BOT_CHECK',
  'SOURCE_LOGIN_REQUIRED',
  /** yt-dlp: the video is not available in the region the download runs from. */
  'SOURCE_GEO_RESTRICTED',
  /** yt-dlp: no extractor supports the URL and the page embeds no video. */
  'SOURCE_UNSUPPORTED_URL',
  'SOURCE_UNAVAILABLE',
  'OUTPUT_MISSING',
  /** The outputs hold more files than the command's maxOutputFiles: ffmpeg was stopped, nothing was stored. */
  'OUTPUT_TOO_MANY_FILES',
  /** A multi-file output's folder holds a link, a device or another file that is not a regular file. */
  'OUTPUT_NOT_REGULAR_FILE',
  /** Two outputs would be stored under the same name in the command's folder. */
  'OUTPUT_NAME_CONFLICT',
  /** The managed outputs are larger than the storage the account had left when the command was handed off (CommandSpec.storageRoomBytes): nothing was stored. */
  'STORAGE_QUOTA_EXCEEDED',
  /** An output's object key, `{prefix}/{command_id}/{filename}`, would be over S3's 1,024 bytes. */
  'OUTPUT_KEY_TOO_LONG',
  'UPLOAD_FAILED',
  /** An output could not be written to the command's storage destination (the customer's bucket). */
  'DESTINATION_UPLOAD_FAILED',
  'INTERNAL_ERROR',
] as const
export type RunnerErrorStatus = (typeof RUNNER_ERROR_STATUSES)[number]
