import type { CommandLimits, CommandSpec, StorageDestinationSpec } from '../../contracts/command-spec.js'
import type { CommandStatus } from '../../contracts/command-types.js'
import type { WorkFields, WorkState } from '../work-list.js'
import type { CommandDraft } from './drafts.js'
import type { CommandPollResponse, FailedFile, OutputFileMeta } from './schemas.js'

/**
 * The names of the record's dispatch work fields (api/work-list.ts): the
 * record is the outbox. It is inserted waiting, so a command is never
 * accepted without its intent to dispatch; the dispatcher claims it, hands it
 * to the executor and marks it done, or puts it off after a failed hand-off.
 */
export const DISPATCH_FIELDS: WorkFields = { state: 'dispatch_state', dueAt: 'dispatch_due_at', claim: 'dispatch_claim', attempts: 'dispatch_attempts' }

/**
 * The names of the record's cancel work fields: a cancel request is recorded
 * waiting on the record by the API (CommandRepository#requestCancel), and the
 * worker's canceller (api/cancels/canceller.ts) claims it, stops the run and
 * reports the command FAILED / CANCELLED.
 */
export const CANCEL_FIELDS: WorkFields = { state: 'cancel_state', dueAt: 'cancel_due_at', claim: 'cancel_claim', attempts: 'cancel_attempts' }

/** The error_status of a cancelled command. */
export const CANCELLED = 'CANCELLED'

/**
 * The local executor's run of the command (EXECUTOR=local only; absent until
 * its first hand-off). A run is started once, and once more when a restart of
 * the service interrupted it: `run_attempt` counts the starts, `run_boot_id`
 * says which start of the service owns the run now.
 */
export interface LocalRunFields {
  run_state?: 'running' | 'ended'
  run_attempt?: number
  run_boot_id?: string
  run_work_dir?: string
}

/** A command in the `commands` collection. */
export interface CommandDocument extends CommandDraft, LocalRunFields {
  _id: string
  account_id: string
  status: CommandStatus
  created_at: Date
  updated_at: Date
  /** Filled by the status projector (runner issue) as the command runs and ends. */
  total_processing_seconds: number | null
  ffmpeg_command_run_seconds: number | null
  error_status: string | null
  error_message: string | null
  /** `out_*` alias → the stored output, once the command has outputs. */
  output_results: Record<string, OutputFileMeta> | null
  failed_files: Record<string, FailedFile> | null
  dispatch_state: WorkState
  /** When the next hand-off may start; while one is in progress, when its lease ends. */
  dispatch_due_at: Date
  dispatch_claim: string | null
  /** Hand-offs started, failed ones included. */
  dispatch_attempts: number
  /** The account's id while the command waits for its hand-off, null after (its account's queue). */
  dispatch_queue: string | null
  /** From the claim of its hand-off until it ends, the token of the account's slot it holds (api/dispatcher/account-schedule.ts). */
  dispatch_slot?: string | null
  /** Why the last failed hand-off failed; absent until one did. */
  dispatch_last_error?: string
  /**
   * The storage destination's description as it was when the command was
   * accepted (no credentials); null or absent for managed storage.
   */
  storage_destination?: StorageDestinationSpec | null
  /** The `in_*` aliases whose URL is one of the account's storage_urls, checked at acceptance. */
  managed_inputs: string[]
  /** True when input_compressed_folder is one of the account's storage_urls, checked at acceptance; absent without a folder. */
  managed_compressed_folder?: boolean
  /** Written by the status projector only (not in the spec's response): 0–100 while PROCESSING. */
  progress?: number | null
  processing_stage?: string | null
  started_at?: Date | null
  completed_at?: Date | null
  /** How many times the status projector wrote the record; each write expects the count it read. Absent until the first. */
  projection_revision?: number
  /** The limits resolved against the plan at acceptance (command-limits.ts); absent on records built without one (benches). */
  limits?: CommandLimits
  /** Days its managed outputs are kept, resolved against the plan at acceptance (api/files/retention.ts); null or absent = until deleted. */
  retention_days?: number | null
  /** When the client asked to cancel (written once, by the API); absent when it never did. */
  cancel_requested_at?: Date
  /** The cancel's work fields (CANCEL_FIELDS), present once a cancel was requested. */
  cancel_state?: WorkState
  cancel_due_at?: Date
  cancel_claim?: string | null
  cancel_attempts?: number
}

/** A new QUEUED record, waiting for its hand-off. */
export function newCommandDocument(
  draft: CommandDraft,
  ids: {
    commandId: string
    accountId: string
    storageDestination?: StorageDestinationSpec | null
    managedInputs?: string[]
    managedCompressedFolder?: boolean
    limits?: CommandLimits
    retentionDays?: number | null
  },
  now: Date,
): CommandDocument {
  // What was asked is resolved into `limits`; the record keeps the outcome only.
  const { requested_limits: _requested, ...fields } = draft
  return {
    _id: ids.commandId,
    account_id: ids.accountId,
    ...fields,
    ...(ids.limits ? { limits: ids.limits } : {}),
    retention_days: ids.retentionDays ?? null,
    storage_destination: ids.storageDestination ?? null,
    managed_inputs: ids.managedInputs ?? [],
    ...(fields.input_compressed_folder ? { managed_compressed_folder: ids.managedCompressedFolder ?? false } : {}),
    status: 'QUEUED',
    created_at: now,
    updated_at: now,
    total_processing_seconds: null,
    ffmpeg_command_run_seconds: null,
    error_status: null,
    error_message: null,
    output_results: null,
    failed_files: null,
    dispatch_state: 'waiting',
    dispatch_due_at: now,
    dispatch_claim: null,
    dispatch_attempts: 0,
    dispatch_queue: ids.accountId,
    dispatch_slot: null,
  }
}

/**
 * The record's fields toPollResponse reads: GET /commands/:id asks the store
 * for these alone, not the dispatch, run and cancel fields beside them.
 */
export const POLL_FIELDS = [
  'status',
  'command_type',
  'total_processing_seconds',
  'ffmpeg_command_run_seconds',
  'metadata',
  'error_status',
  'error_message',
  'original_request',
  'progress',
  'processing_stage',
  'output_results',
  'failed_files',
] as const satisfies readonly (keyof CommandDocument)[]

/** What toPollResponse needs of a record. */
export type PollFields = Pick<CommandDocument, '_id' | (typeof POLL_FIELDS)[number]>

/** The spec's CommandPollResponse (also the webhook's `data`). */
export function toPollResponse(doc: PollFields): CommandPollResponse {
  const response: CommandPollResponse = {
    command_id: doc._id,
    status: doc.status,
    command_type: doc.command_type,
    total_processing_seconds: doc.total_processing_seconds,
    ffmpeg_command_run_seconds: doc.ffmpeg_command_run_seconds,
    metadata: doc.metadata,
    error_status: doc.error_status,
    error_message: doc.error_message,
    original_request: doc.original_request,
    ...progressOf(doc),
  }
  // "present when status is SUCCESS": absent before, so clients cannot mistake a partial map for a result.
  if (doc.status === 'SUCCESS') response.output_files = doc.output_results ?? {}
  if (doc.failed_files && Object.keys(doc.failed_files).length > 0) response.failed_files = doc.failed_files
  return response
}

/**
 * Live progress as clients see it: the projector's figures while PROCESSING,
 * 100 on SUCCESS, null while QUEUED and on FAILED (how far a failed command
 * got says nothing useful, and a number there reads like a partial result).
 */
export function progressOf(doc: Pick<CommandDocument, 'status' | 'progress' | 'processing_stage'>): { progress: number | null; processing_stage: string | null } {
  if (doc.status === 'PROCESSING') return { progress: doc.progress ?? null, processing_stage: doc.processing_stage ?? null }
  return { progress: doc.status === 'SUCCESS' ? 100 : null, processing_stage: null }
}

/** What the runner receives for this command: nothing secret, placeholders unresolved. */
export function toCommandSpec(doc: CommandDocument): CommandSpec {
  return {
    commandId: doc._id,
    accountId: doc.account_id,
    commandType: doc.command_type,
    inputFiles: doc.ytdlp ? {} : doc.input_files,
    managedInputs: doc.ytdlp ? [] : doc.managed_inputs,
    ...(doc.input_compressed_folder ? { inputCompressedFolder: doc.input_compressed_folder, managedCompressedFolder: doc.managed_compressed_folder ?? false } : {}),
    outputFiles: doc.output_files,
    ...(doc.compress_outputs !== undefined ? { compressOutputs: doc.compress_outputs } : {}),
    ffmpegCommands: doc.ffmpeg_commands,
    ytdlp: doc.ytdlp ? { inputUrls: doc.input_files, formatSelector: doc.ytdlp.format_selector } : null,
    storageDestinationId: doc.storage_destination_id,
    storageDestination: doc.storage_destination ?? null,
    submittedAt: doc.created_at.toISOString(),
    ...(doc.limits ? { limits: doc.limits } : {}),
  }
}
