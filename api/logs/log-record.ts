/**
 * A command's log as it is kept: the parts that arrived (each a chunk's text,
 * keyed by its FFKUBE_LOGS stream sequence, which is the order its runner
 * wrote them in), cut to the last MAX_LOG_BYTES. Folding chunks in is pure
 * and does not care in which order they come or how often: a chunk already
 * kept, or older than what was cut away, changes nothing, so worker replicas
 * that each hold some chunks of one command agree on the result.
 */
import { MAX_LOG_BYTES } from '../../contracts/log-chunks.js'

export interface LogPart {
  seq: number
  text: string
}

export interface LogRecord {
  /** The command id. */
  _id: string
  /** In stream order. */
  parts: LogPart[]
  /** True once anything was cut away (the log's start, or text the runner could not send). */
  truncated: boolean
  /** Each write expects the revision it read; 1 after the insert. */
  revision: number
}

/** A chunk as the fold takes it: its stream sequence, text, and what its runner dropped before it. */
export interface IncomingChunk {
  seq: number
  text: string
  droppedBytes: number
}

/** The first `bytes` of a text dropped, never splitting a UTF-8 character. */
function dropLeadingBytes(text: string, bytes: number): string {
  const buffer = Buffer.from(text)
  let start = Math.min(bytes, buffer.length)
  // Skip continuation bytes (10xxxxxx): start on a character boundary.
  while (start < buffer.length && ((buffer[start] as number) & 0xc0) === 0x80) start++
  return buffer.subarray(start).toString('utf8')
}

/** The record's parts and flag after `chunks`; null when they change nothing. Pure. */
export function foldChunks(record: Pick<LogRecord, 'parts' | 'truncated'> | null, chunks: readonly IncomingChunk[], maxBytes = MAX_LOG_BYTES): Pick<LogRecord, 'parts' | 'truncated'> | null {
  const parts = [...(record?.parts ?? [])]
  let truncated = record?.truncated ?? false
  const oldest = parts[0]?.seq ?? 0
  const known = new Set(parts.map((part) => part.seq))
  let changed = false
  for (const chunk of chunks) {
    if (known.has(chunk.seq) || (truncated && chunk.seq < oldest)) continue
    known.add(chunk.seq)
    const marker = chunk.droppedBytes > 0 ? `[${chunk.droppedBytes} bytes of log dropped here: the runner wrote faster than it could send]\n` : ''
    parts.push({ seq: chunk.seq, text: marker + chunk.text })
    if (chunk.droppedBytes > 0) truncated = true
    changed = true
  }
  if (!changed) return null
  parts.sort((a, b) => a.seq - b.seq)
  let over = parts.reduce((sum, part) => sum + Buffer.byteLength(part.text), 0) - maxBytes
  while (over > 0 && parts.length > 0) {
    truncated = true
    const first = parts[0] as LogPart
    const size = Buffer.byteLength(first.text)
    if (size <= over) {
      parts.shift()
      over -= size
    } else {
      parts[0] = { seq: first.seq, text: dropLeadingBytes(first.text, over) }
      over = 0
    }
  }
  return { parts, truncated }
}

/** The log's text. */
export function logText(record: Pick<LogRecord, 'parts'> | null): string {
  return (record?.parts ?? []).map((part) => part.text).join('')
}
