/**
 * What one status event does to a command record: the pure core of the
 * status projector. States move forward only (QUEUED → PROCESSING →
 * SUCCESS | FAILED); an event that would move one back, or anything after a
 * terminal state, changes nothing, so redelivered and out-of-order events are
 * harmless.
 */
import { createHash } from 'node:crypto'
import type { CommandStatus } from '../../contracts/command-types.js'
import type { OutputFileResult, StatusEvent } from '../../contracts/status-events.js'
import type { CommandDocument } from '../commands/command-document.js'
import type { OutputFileMeta } from '../commands/schemas.js'
import { NO_MEDIA_FACTS, type FileDocument } from '../files/file-document.js'

const RANK: Record<CommandStatus, number> = { QUEUED: 0, PROCESSING: 1, SUCCESS: 2, FAILED: 2 }

export function isTerminal(status: CommandStatus): boolean {
  return RANK[status] === 2
}

/** The fields a PROCESSING event sets; null when it changes nothing. */
export function processingUpdate(doc: CommandDocument, event: StatusEvent & { type: 'PROCESSING' }, now: Date): Record<string, unknown> | null {
  if (isTerminal(doc.status)) return null
  const previous = doc.progress ?? null
  // Progress only grows: a late event of an earlier percent is ignored.
  const progress = event.progress === null ? previous : Math.max(previous ?? 0, Math.min(100, event.progress))
  if (doc.status === 'PROCESSING' && progress === previous && doc.processing_stage === event.stage) return null
  return { status: 'PROCESSING', progress, processing_stage: event.stage, started_at: doc.started_at ?? now, updated_at: now }
}

/**
 * A managed output's file id, derived from the command and alias: a
 * redelivered SUCCESS inserts the same ids, and the duplicate inserts fail
 * harmlessly instead of creating a second record.
 */
export function outputFileId(commandId: string, alias: string): string {
  return `file_${createHash('sha256').update(`${commandId}:${alias}`).digest('hex').slice(0, 32)}`
}

/** The `files` record of one output (service_store_type OUTPUT), so GET /files/:id and the deletes work on it. */
export function outputFileDocument(doc: CommandDocument, alias: string, result: OutputFileResult, storageUrl: string | null, now: Date): FileDocument {
  const internal = result.storage_location === 'INTERNAL'
  return {
    ...NO_MEDIA_FACTS,
    _id: outputFileId(doc._id, alias),
    account_id: doc.account_id,
    command_id: doc._id,
    output_alias: alias,
    filename: result.filename,
    status: 'STORED',
    service_store_type: 'OUTPUT',
    storage_location: result.storage_location,
    object_key: internal ? result.object_key : null,
    storage_url: storageUrl,
    external_uri: internal ? null : `s3://${result.bucket}/${result.object_key}`,
    external_object_key: internal ? null : result.object_key,
    is_deleted: false,
    deleted_at: null,
    original_file_url: null,
    size_mbytes: result.size_mbytes,
    duration: result.duration,
    width: result.width,
    height: result.height,
    frame_rate: result.frame_rate,
    bitrate_video_kb: result.bitrate_video_kb,
    bitrate_audio_kb: result.bitrate_audio_kb,
    sample_rate: result.sample_rate,
    channels: result.channels,
    file_type: result.file_type,
    file_format: result.file_format,
    codec: result.codec,
    pixel_format: result.pixel_format,
    mime_type: result.mime_type,
    error_status: null,
    error_message: null,
    created_at: now,
    updated_at: now,
  }
}

/** The spec's OutputFileMeta of a stored output. */
export function outputFileMeta(file: FileDocument): OutputFileMeta {
  return {
    file_id: file._id,
    filename: file.filename,
    storage_url: file.storage_url,
    storage_location: file.storage_location,
    external_uri: file.external_uri,
    external_object_key: file.external_object_key,
    status: file.status,
    service_store_type: file.service_store_type,
    is_deleted: file.is_deleted,
    size_mbytes: file.size_mbytes,
    duration: file.duration,
    file_type: file.file_type,
    file_format: file.file_format,
    codec: file.codec,
    pixel_format: file.pixel_format,
    mime_type: file.mime_type,
    width: file.width,
    height: file.height,
    frame_rate: file.frame_rate,
    bitrate_video_kb: file.bitrate_video_kb,
    bitrate_audio_kb: file.bitrate_audio_kb,
  }
}

/** Seconds from submission to `now`, to the millisecond. */
function secondsSince(from: Date, now: Date): number {
  return Math.max(0, Math.round(now.getTime() - from.getTime())) / 1000
}

/** The fields a terminal event sets (with the output files already built); null when the record is terminal already. */
export function terminalUpdate(
  doc: CommandDocument,
  event: StatusEvent & { type: 'SUCCESS' | 'FAILED' },
  outputs: Record<string, FileDocument>,
  now: Date,
): Record<string, unknown> | null {
  if (isTerminal(doc.status)) return null
  const common = {
    status: event.type,
    total_processing_seconds: secondsSince(doc.created_at, now),
    ffmpeg_command_run_seconds: event.ffmpeg_command_run_seconds,
    failed_files: event.failed_files && Object.keys(event.failed_files).length > 0 ? event.failed_files : null,
    progress: event.type === 'SUCCESS' ? 100 : (doc.progress ?? null),
    processing_stage: null,
    completed_at: now,
    updated_at: now,
  }
  if (event.type === 'FAILED') {
    return { ...common, error_status: event.error_status, error_message: event.error_message, output_results: null }
  }
  const results = Object.fromEntries(Object.entries(outputs).map(([alias, file]) => [alias, outputFileMeta(file)]))
  return { ...common, error_status: null, error_message: null, output_results: results }
}

type TerminalEvent = StatusEvent & { type: 'SUCCESS' | 'FAILED' }

export function isTerminalEvent(event: StatusEvent): event is TerminalEvent {
  return event.type !== 'PROCESSING'
}

/**
 * The terminal event that ends the command among `events` (in stream order):
 * the first one, unless the record is terminal already. Its outputs are what
 * foldEvents needs for a SUCCESS.
 */
export function endingEvent(doc: CommandDocument, events: readonly StatusEvent[]): TerminalEvent | null {
  if (isTerminal(doc.status)) return null
  return events.find(isTerminalEvent) ?? null
}

/** The record after a run of events, and the fields to `$set` to get there (null when nothing changed). */
export interface Folded {
  doc: CommandDocument
  set: Record<string, unknown> | null
}

/**
 * Several events of one command, in stream order, as one write: each is
 * applied by processingUpdate or terminalUpdate to the record as the ones
 * before it left it, exactly as one write per event would, so a stage event
 * without progress still keeps the progress an earlier event set. `outputs`
 * are the files of endingEvent(doc, events) when it is a SUCCESS.
 */
export function foldEvents(doc: CommandDocument, events: readonly StatusEvent[], outputs: Record<string, FileDocument>, now: Date): Folded {
  let current = doc
  let set: Record<string, unknown> | null = null
  for (const event of events) {
    const update = event.type === 'PROCESSING' ? processingUpdate(current, event, now) : terminalUpdate(current, event, outputs, now)
    if (!update) continue
    current = { ...current, ...update } as CommandDocument
    set = { ...(set ?? {}), ...update }
  }
  return { doc: current, set }
}
