/**
 * GET /api/v1/commands/{commandId}/events read with fetch rather than
 * EventSource, which cannot send the X-API-KEY header. Works in Node 20+ and
 * in browsers.
 */
import { ApiError } from './api-error.js'
import type { CommandPollResponse } from './index.js'
import { SseParser } from './sse-parser.js'

/** One event of the stream: the command as GET returns it at that moment. */
export interface CommandEvent {
  /** The event id (the record's revision); pass it back as `lastEventId` to resume. */
  id: string | null
  command: CommandPollResponse
}

export interface CommandEventsOptions {
  baseUrl: string
  apiKey?: string
  fetch?: (input: Request) => Promise<Response>
  /** Resume after this event: the server sends the current state only if it is newer. */
  lastEventId?: string
  signal?: AbortSignal
  /**
   * A stream silent this long is given up with StreamIdleError (default 45 s: the server sends a
   * keep-alive every 15 s). A peer that went away without closing the connection (a replaced pod
   * behind a Service) would otherwise hold the reader for ever; the caller resumes with the last id.
   */
  idleTimeoutMs?: number
}

export const DEFAULT_IDLE_TIMEOUT_MS = 45_000

/** Nothing, not even a keep-alive, arrived on the stream for `idleTimeoutMs`. */
export class StreamIdleError extends Error {
  constructor(readonly idleTimeoutMs: number) {
    super(`the event stream sent nothing for ${idleTimeoutMs} ms (the server sends a keep-alive every 15 s); resume with the last event id`)
    this.name = 'StreamIdleError'
  }
}

/**
 * The command's events until the server ends the stream: after the terminal
 * event, or earlier when the stream reached its lifetime on the server
 * (EVENT_STREAM_MAX_SECONDS), which a caller resumes by calling again with
 * the last event's id as `lastEventId`. A 204 (the command ended and `lastEventId` is its last event)
 * yields nothing. An error answer throws ApiError; a dropped connection
 * throws what fetch threw, and a stream silent for `idleTimeoutMs` throws
 * StreamIdleError; the caller may resume with the last id.
 */
export async function* commandEvents(commandId: string, options: CommandEventsOptions): AsyncGenerator<CommandEvent, void, undefined> {
  const headers: Record<string, string> = { accept: 'text/event-stream' }
  if (options.apiKey !== undefined) headers['x-api-key'] = options.apiKey
  if (options.lastEventId !== undefined) headers['last-event-id'] = options.lastEventId
  const url = `${options.baseUrl.replace(/\/+$/, '')}/api/v1/commands/${encodeURIComponent(commandId)}/events`
  const request = new Request(url, { headers, ...(options.signal ? { signal: options.signal } : {}) })
  const response = await (options.fetch ?? globalThis.fetch)(request)
  if (response.status === 204) return
  if (!response.ok) {
    const text = await response.text()
    let body: unknown = text
    try {
      body = JSON.parse(text)
    } catch {
      // Not JSON (a proxy's page): ApiError falls back to the status line.
    }
    throw ApiError.from(response, body)
  }
  if (!response.body) return
  const reader = response.body.getReader()
  const decoder = new TextDecoder()
  const parser = new SseParser()
  try {
    for (;;) {
      // At the end, an event without its closing blank line is dropped, as the standard says.
      const { done, value } = await readWithin(reader, options.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS)
      if (done) return
      for (const message of parser.push(decoder.decode(value, { stream: true }))) {
        if (message.event === 'message') yield { id: message.id, command: JSON.parse(message.data) as CommandPollResponse }
      }
    }
  } finally {
    // A consumer that stops early (break, throw) closes the connection.
    await reader.cancel().catch(() => undefined)
  }
}

/** The next chunk, or StreamIdleError when none comes within `ms`. */
async function readWithin<T>(reader: ReadableStreamDefaultReader<T>, ms: number): ReturnType<ReadableStreamDefaultReader<T>['read']> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const idle = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new StreamIdleError(ms)), ms)
  })
  try {
    return await Promise.race([reader.read(), idle])
  } finally {
    clearTimeout(timer)
  }
}
