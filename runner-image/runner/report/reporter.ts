/**
 * Where the runner's status events go. Phases call `report` with an event
 * body; the reporter adds the envelope (command_id, event_id, emitted_at).
 */
import type { Writable } from 'node:stream'
import type { LogChunk, LogChunkLine } from '../../../contracts/log-chunks.js'
import { statusEventId, type StatusEvent, type StatusEventBody } from '../../../contracts/status-events.js'

export interface StatusReporter {
  report(body: StatusEventBody): Promise<void>
  /** Sends a chunk of the tools' stderr to the command's log; absent: the log is not kept. */
  log?(chunk: LogChunk): Promise<void>
  close(): Promise<void>
}

/** Wraps a body in its envelope. */
export function envelope(commandId: string, body: StatusEventBody, now: () => Date): StatusEvent {
  return { ...body, command_id: commandId, event_id: statusEventId(commandId, body), emitted_at: now().toISOString() } as StatusEvent
}

/**
 * One JSON object per line on a stream (the runner's stdout in local mode):
 * the parent process reads the lines and forwards them; the event_id lets it
 * de-duplicate as JetStream would.
 */
export class JsonLinesReporter implements StatusReporter {
  constructor(
    private readonly commandId: string,
    private readonly out: Writable,
    private readonly now: () => Date = () => new Date(),
  ) {}

  async report(body: StatusEventBody): Promise<void> {
    const line = `${JSON.stringify(envelope(this.commandId, body, this.now))}\n`
    if (!this.out.write(line)) await new Promise<void>((resolve) => this.out.once('drain', resolve))
  }

  /** A `{"log_chunk": …}` line, relayed to FFKUBE_LOGS by the parent. */
  async log(chunk: LogChunk): Promise<void> {
    const line = `${JSON.stringify({ log_chunk: chunk } satisfies LogChunkLine)}\n`
    if (!this.out.write(line)) await new Promise<void>((resolve) => this.out.once('drain', resolve))
  }

  async close(): Promise<void> {}
}
