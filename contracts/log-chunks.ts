/**
 * The tools' stderr on its way from a runner to the command's log (GET
 * /commands/:id/logs): chunks published to JetStream (subject
 * `ffkube.logs.<command_id>`, stream FFKUBE_LOGS) by the runner, or relayed
 * for a warm local runner by the executor, and folded into the log record by
 * the API side's log projector. A chunk holds text already cleaned by the
 * runner: our work directory's paths are rewritten to the client's aliases
 * and filenames before anything leaves the runner.
 */

export const LOG_STREAM = 'FFKUBE_LOGS'
export const LOG_SUBJECT_PREFIX = 'ffkube.logs'

/** The most of a command's log that is kept: its last 256 KiB. */
export const MAX_LOG_BYTES = 256 * 1024

/** The subject a command's log chunks are published on. */
export function logSubject(commandId: string): string {
  return `${LOG_SUBJECT_PREFIX}.${commandId}`
}

export interface LogChunk {
  command_id: string
  /** Which runner process wrote it (a random id per process): with seq, the chunk's identity. */
  source: string
  /** 1, 2, … within its source. */
  seq: number
  text: string
  /** Bytes the runner dropped before this chunk because it could not publish fast enough. */
  dropped_bytes: number
  /** ISO 8601, from the runner's clock. */
  emitted_at: string
}

/** The Nats-Msg-Id of a chunk, so a re-sent chunk is stored once. */
export function logChunkId(chunk: Pick<LogChunk, 'command_id' | 'source' | 'seq'>): string {
  return `${chunk.command_id}:${chunk.source}:${chunk.seq}`
}

/** A JSON line of a warm runner's stdout that carries a chunk (the others are status events). */
export interface LogChunkLine {
  log_chunk: LogChunk
}

/** The chunk in a parsed line of a warm runner's stdout, or null. */
export function logChunkIn(message: unknown): LogChunk | null {
  const chunk = (message as Partial<LogChunkLine> | null)?.log_chunk
  return typeof chunk?.command_id === 'string' && typeof chunk.text === 'string' && typeof chunk.seq === 'number' && typeof chunk.source === 'string' ? chunk : null
}
