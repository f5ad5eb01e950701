/**
 * One open Server-Sent Events response and its lifetime: a comment line
 * every `keepAliveMs` so proxies keep a quiet stream open, an end after
 * `lifetimeMs` with a `retry:` hint (EventSource then reconnects with its
 * Last-Event-ID and misses nothing), and one finish for every way a stream
 * ends: the client gone, a write that failed, the command's end, the
 * lifetime, the server's shutdown. Some of them come together (ending the
 * response fires 'close'): the first one finishes it, the rest do nothing.
 */
import type { ServerResponse } from 'node:http'

/** A comment line this often keeps proxies and load balancers from closing a quiet stream. */
export const KEEP_ALIVE_MS = 15_000
/** The `retry:` a stream ends its lifetime with: EventSource waits this long before it reconnects. */
export const RECONNECT_HINT_MS = 1_000

export interface SseStreamOptions {
  keepAliveMs: number
  lifetimeMs: number
}

export class SseStream {
  readonly #raw: ServerResponse
  readonly #keepAlive: NodeJS.Timeout
  readonly #lifetime: NodeJS.Timeout
  readonly #onFinish: Array<() => void> = []
  #finished = false

  /** Starts the stream on a response Fastify no longer writes (a hijacked reply). */
  constructor(raw: ServerResponse, options: SseStreamOptions) {
    this.#raw = raw
    raw.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache, no-transform',
      connection: 'keep-alive',
      // nginx and its kin: pass events on as they come.
      'x-accel-buffering': 'no',
    })
    this.#keepAlive = setInterval(() => raw.write(': keep-alive\n\n'), options.keepAliveMs)
    this.#lifetime = setTimeout(() => {
      raw.write(`retry: ${RECONNECT_HINT_MS}\n\n`)
      this.finish()
    }, options.lifetimeMs)
    raw.once('close', () => this.finish())
    // A write racing a dropped connection: the stream is over, nothing to report.
    raw.on('error', () => this.finish())
  }

  /** Ended, or its client is gone already (its 'close' may have come before the listener). */
  get finished(): boolean {
    return this.#finished || this.#raw.destroyed
  }

  write(text: string): void {
    this.#raw.write(text)
  }

  /** Runs `fn` once when the stream finishes (at once if it has). */
  onFinish(fn: () => void): void {
    if (this.#finished) fn()
    else this.#onFinish.push(fn)
  }

  finish(): void {
    if (this.#finished) return
    this.#finished = true
    clearInterval(this.#keepAlive)
    clearTimeout(this.#lifetime)
    for (const fn of this.#onFinish) fn()
    if (!this.#raw.writableEnded) this.#raw.end()
  }
}
