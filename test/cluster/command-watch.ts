/**
 * A client watching one command through a fault: the event stream, resumed
 * with Last-Event-ID whenever it drops (the API pod going away, a 5xx while
 * the store restarts), and GET polled beside it. Keeps every status each of
 * them showed, in order, for the fault set's "no status goes backwards".
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { commandEvents } from '../../client/command-events.js'
import { TERMINAL_STATUSES } from './status-order.js'

/** A command's record as GET and the stream show it (the fields read here). */
export interface SeenRecord {
  command_id: string
  status: string
  error_status?: string | null
  error_message?: string | null
}

export interface WatchedCommand {
  commandId: string
  /** Statuses the event stream delivered, across its reconnects. */
  readonly streamed: string[]
  /** Statuses GET answered with. */
  readonly polled: string[]
  /** The stream's reconnects after a drop or an error answer. */
  readonly reconnects: number
  /** The last record GET answered with (undefined without polling). */
  readonly last: SeenRecord | undefined
  /** Date.now() when the stream delivered the terminal status. */
  readonly streamEndedAt: number | undefined
  /** Resolves once the stream and GET (when polled) have both shown a terminal status. */
  ended: Promise<void>
  stop(): void
}

export interface WatchTarget {
  baseUrl: string
  apiKey: string
}

export interface WatchOptions {
  /** Between two GETs (default 1000 ms). */
  pollMs?: number
  /** False: the event stream only, for a caller that polls many commands by listing them. */
  poll?: boolean
  /**
   * A stream silent this long is taken as dead and resumed (default 40 s; the server sends a
   * keep-alive every 15 s). An API pod deleted under load can vanish without closing its
   * streams: the client's socket then waits forever, as the chaos bench saw once.
   */
  idleMs?: number
}

export function watchCommand(target: WatchTarget, commandId: string, options: WatchOptions = {}): WatchedCommand {
  const { pollMs = 1000, poll: polling = true, idleMs = 40_000 } = options
  const controller = new AbortController()
  const { signal } = controller
  const streamed: string[] = []
  const polled: string[] = []
  let reconnects = 0
  let last: SeenRecord | undefined
  let streamEndedAt: number | undefined
  const pause = (ms: number) => sleep(ms, undefined, { signal }).catch(() => undefined)

  const followStream = async () => {
    let lastEventId: string | undefined
    while (!signal.aborted) {
      const attempt = new AbortController()
      const stopAttempt = () => attempt.abort()
      signal.addEventListener('abort', stopAttempt)
      let idle = setTimeout(stopAttempt, idleMs)
      // Every chunk (events and the server's keep-alive comments) proves the stream alive.
      const watchedFetch = async (request: Request) => {
        const response = await fetch(request)
        if (!response.body) return response
        const body = response.body.pipeThrough(new TransformStream<Uint8Array, Uint8Array>({
          transform: (chunk, controller) => {
            clearTimeout(idle)
            idle = setTimeout(stopAttempt, idleMs)
            controller.enqueue(chunk)
          },
        }))
        return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers })
      }
      try {
        for await (const event of commandEvents(commandId, { ...target, signal: attempt.signal, fetch: watchedFetch, ...(lastEventId === undefined ? {} : { lastEventId }) })) {
          lastEventId = event.id ?? lastEventId
          streamed.push(event.command.status)
          if (TERMINAL_STATUSES.has(event.command.status)) {
            streamEndedAt = Date.now()
            return
          }
        }
      } catch {
        // A dropped connection, a silent one, or an error answer: resumed below, as a client would.
      } finally {
        clearTimeout(idle)
        signal.removeEventListener('abort', stopAttempt)
      }
      if (signal.aborted) return
      reconnects++
      await pause(500)
    }
  }
  const poll = async () => {
    while (polling && !signal.aborted) {
      try {
        const response = await fetch(`${target.baseUrl}/api/v1/commands/${commandId}`, { headers: { 'x-api-key': target.apiKey }, signal })
        if (response.status === 200) {
          last = (await response.json()) as SeenRecord
          polled.push(last.status)
          if (TERMINAL_STATUSES.has(last.status)) return
        }
      } catch {
        // The API is away for the moment; ask again.
      }
      await pause(pollMs)
    }
  }
  const ended = Promise.all([followStream(), poll()]).then(() => undefined)
  return {
    commandId,
    streamed,
    polled,
    get reconnects() {
      return reconnects
    },
    get last() {
      return last
    },
    get streamEndedAt() {
      return streamEndedAt
    },
    ended,
    stop: () => controller.abort(),
  }
}
