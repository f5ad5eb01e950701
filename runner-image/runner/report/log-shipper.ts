/**
 * Ships the tools' stderr (ffmpeg, yt-dlp) to the command's log while they
 * run: each step starts with a label line, text is rewritten line by line
 * (log-paths.ts) so no absolute path of ours leaves the runner, and what
 * gathers is sent as one chunk per `intervalMs` (1 s), in order, without
 * making a tool wait for NATS. Bounded: when chunks cannot go out as fast as
 * a tool writes, only the newest MAX_LOG_BYTES wait and the next chunk says
 * how much was dropped (the log keeps only its last 256 KiB anyway). A lost
 * chunk is only logged: the log is a diagnosis aid, not the command's result.
 */
import { randomUUID } from 'node:crypto'
import type { Logger } from 'pino'
import { MAX_LOG_BYTES, type LogChunk } from '../../../contracts/log-chunks.js'

/** Where a phase writes its tools' stderr. */
export interface ToolLog {
  /** Starts a labelled step (`ffmpeg: command 1 of 2`). */
  step(label: string): void
  /** Appends a piece of the current step's stderr. */
  write(text: string): void
}

/** Publishes one chunk; rejects when it could not. */
export type LogSink = (chunk: LogChunk) => Promise<void>

export const LOG_INTERVAL_MS = 1000

export class LogShipper implements ToolLog {
  readonly #source = randomUUID().slice(0, 8)
  #seq = 0
  /** Complete, rewritten lines waiting for the next chunk. */
  #pending = ''
  /** The current line, until its newline comes (a path may be split across pieces). */
  #partial = ''
  #dropped = 0
  #timer: ReturnType<typeof setTimeout> | null = null
  /** The chunk being published; while it is, text waits in #pending (bounded) rather than queueing chunks. */
  #inFlight: Promise<void> | null = null

  constructor(
    private readonly commandId: string,
    private readonly sink: LogSink | null,
    private readonly rewrite: (text: string) => string,
    private readonly log: Pick<Logger, 'warn'>,
    private readonly intervalMs = LOG_INTERVAL_MS,
    private readonly now: () => Date = () => new Date(),
  ) {}

  step(label: string): void {
    this.#takeLines(`${this.#partial ? '\n' : ''}==> ${label}\n`)
  }

  write(text: string): void {
    this.#takeLines(text)
  }

  /** Sends what is waiting, the unfinished line included; resolves when every chunk so far went out (or was given up on). */
  flush(): Promise<void> {
    if (!this.sink) return Promise.resolve()
    if (this.#partial) {
      this.#append(this.rewrite(this.#partial) + '\n')
      this.#partial = ''
    }
    return this.#drain()
  }

  async #drain(): Promise<void> {
    while (this.#inFlight || this.#pending || this.#dropped > 0) {
      if (this.#inFlight) await this.#inFlight
      else this.#send()
    }
  }

  #takeLines(text: string): void {
    if (!this.sink) return
    const joined = this.#partial + text
    const end = joined.lastIndexOf('\n')
    if (end < 0) {
      // A line this long is no path worth keeping whole: cut it so the buffer stays bounded.
      this.#partial = joined.length > 8192 ? joined.slice(-8192) : joined
    } else {
      this.#partial = joined.slice(end + 1)
      this.#append(this.rewrite(joined.slice(0, end + 1)))
    }
    this.#timer ??= setTimeout(() => this.#send(), this.intervalMs)
  }

  #append(text: string): void {
    this.#pending += text
    const over = Buffer.byteLength(this.#pending) - MAX_LOG_BYTES
    if (over > 0) {
      // Characters, not bytes, but never fewer than needed: a UTF-8 character is at least one byte.
      this.#pending = this.#pending.slice(over)
      this.#dropped += over
    }
  }

  #send(): void {
    if (this.#timer) clearTimeout(this.#timer)
    this.#timer = null
    if (!this.sink || this.#inFlight || (!this.#pending && this.#dropped === 0)) return
    const chunk: LogChunk = { command_id: this.commandId, source: this.#source, seq: ++this.#seq, text: this.#pending, dropped_bytes: this.#dropped, emitted_at: this.now().toISOString() }
    this.#pending = ''
    this.#dropped = 0
    this.#inFlight = this.sink(chunk)
      .catch((err: unknown) => this.log.warn({ err, command_id: this.commandId }, 'log chunk lost'))
      .finally(() => {
        this.#inFlight = null
        // What gathered meanwhile goes at the next tick of the interval.
        if (this.#pending) this.#timer ??= setTimeout(() => this.#send(), this.intervalMs)
      })
  }
}
