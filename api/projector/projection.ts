/**
 * What one status event does to a command record: the pure core of the
 * status projector. States move forward only (QUEUED → PROCESSING →
 * SUCCESS | FAILED); an event that would move one back, or anything after a
 * terminal state, changes nothing, so redelivered and out-of-order events are
 * harmless.
 */
import { isTerminalStatus } from '../../contracts/command-types.js'
import type { FailedEvent, StatusEvent, SuccessEvent } from '../../contracts/status-events.js'
import { STORAGE_QUOTA_EXCEEDED } from '../files/storage-quota.js'
import { OUTPUT_OUTSIDE_COMMAND_FOLDER, type CommandFolder, type MisplacedOutput } from '../../contracts/command-folder.js'
import type { CommandDocument } from '../commands/command-document.js'
import type { OutputFileMeta } from '../commands/schemas.js'

/** The fields a PROCESSING event sets; null when it changes nothing. */
export function processingUpdate(doc: CommandDocument, event: StatusEvent & { type: 'PROCESSING' }, now: Date): Partial<CommandDocument> | null {
  if (isTerminalStatus(doc.status)) return null
  const previous = doc.progress ?? null
  // Progress only grows: a late event of an earlier percent is ignored.
  const progress = event.progress === null ? previous : Math.max(previous ?? 0, Math.min(100, event.progress))
  if (doc.status === 'PROCESSING' && progress === previous && doc.processing_stage === event.stage) return null
  return { status: 'PROCESSING', progress, processing_stage: event.stage, started_at: doc.started_at ?? now, updated_at: now }
}

/** Seconds from submission to `now`, to the millisecond. */
function secondsSince(from: Date, now: Date): number {
  return Math.max(0, Math.round(now.getTime() - from.getTime())) / 1000
}

/** The fields a terminal event sets (with its outputs already stored); null when the record is terminal already. */
export function terminalUpdate(
  doc: CommandDocument,
  event: StatusEvent & { type: 'SUCCESS' | 'FAILED' },
  outputs: Record<string, OutputFileMeta>,
  now: Date,
): Partial<CommandDocument> | null {
  if (isTerminalStatus(doc.status)) return null
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
  return { ...common, error_status: null, error_message: null, output_results: outputs }
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
  if (isTerminalStatus(doc.status)) return null
  return events.find(isTerminalEvent) ?? null
}

/** The record after a run of events, and the fields to `$set` to get there (null when nothing changed). */
export interface Folded {
  doc: CommandDocument
  set: Partial<CommandDocument> | null
}

/**
 * Several events of one command, in stream order, as one write: each is
 * applied by processingUpdate or terminalUpdate to the record as the ones
 * before it left it, exactly as one write per event would, so a stage event
 * without progress still keeps the progress an earlier event set. `outputs`
 * are the stored files of endingEvent(doc, events) when it is a SUCCESS.
 */
export function foldEvents(doc: CommandDocument, events: readonly StatusEvent[], outputs: Record<string, OutputFileMeta>, now: Date): Folded {
  let current = doc
  let set: Partial<CommandDocument> | null = null
  for (const event of events) {
    const update = event.type === 'PROCESSING' ? processingUpdate(current, event, now) : terminalUpdate(current, event, outputs, now)
    if (!update) continue
    current = { ...current, ...update }
    set = { ...(set ?? {}), ...update }
  }
  return { doc: current, set }
}

/**
 * The FAILED a refused SUCCESS becomes: same run seconds, no outputs, the
 * refusal as error_status and error_message. Applied in place of the
 * runner's event, never published.
 */
function refusedSuccess(event: SuccessEvent, errorStatus: string, errorMessage: string): FailedEvent {
  return {
    type: 'FAILED',
    command_id: event.command_id,
    event_id: event.event_id,
    emitted_at: event.emitted_at,
    error_status: errorStatus,
    error_message: errorMessage,
    ffmpeg_command_run_seconds: event.ffmpeg_command_run_seconds,
    failed_files: event.failed_files,
  }
}

/** The FAILED a SUCCESS becomes when its managed outputs would pass the account's storage quota. */
export function refusedForQuota(event: SuccessEvent, message: string): FailedEvent {
  return refusedSuccess(event, STORAGE_QUOTA_EXCEEDED, `${message}; none of the outputs was kept`)
}

/**
 * The FAILED a SUCCESS becomes when it reports an output outside its
 * command's folder (contracts/command-folder.ts). Nothing of such an event is kept,
 * not even its run seconds or failed_files: it may be forged.
 */
export function refusedAsMisplaced(event: SuccessEvent, misplaced: MisplacedOutput, folder: CommandFolder): FailedEvent {
  // The alias is the event's too: shown only when it reads as one.
  const output = misplaced.alias === '' ? 'the result' : /^[A-Za-z0-9_]{1,64}$/.test(misplaced.alias) ? `output ${misplaced.alias}` : 'an output'
  const message = `${output}: ${misplaced.reason}; a runner may report only objects under ${folder.folder} in the command's bucket, so its result was refused and none of its outputs recorded`
  return { ...refusedSuccess(event, OUTPUT_OUTSIDE_COMMAND_FOLDER, message), ffmpeg_command_run_seconds: null, failed_files: null }
}
