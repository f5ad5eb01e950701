/**
 * A small Server-Sent Events client for the tests: opens a stream with
 * fetch, hands each event (id and parsed data) as it arrives, and resolves
 * when the server ends the stream. No EventSource: the tests need to see
 * exactly what the server sends, reconnects included.
 */

export interface SseEvent {
  id: string | null
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  data: any
  /** `data` as it came, to compare byte for byte with GET. */
  raw: string
}

export interface SseStream {
  status: number
  contentType: string | null
  /** Every event, once the server ended the stream (or it was aborted). */
  done: Promise<SseEvent[]>
  /** Resolves with the first event for which `match` holds. */
  next(match?: (event: SseEvent) => boolean): Promise<SseEvent>
  /** Drops the connection, as a client that goes away. */
  abort(): void
  /** The last `retry:` the server sent (ms), or null. */
  readonly retry: number | null
}

/** Opens `url`; `onEvent` sees each event as it arrives. */
export async function openEventStream(url: string, headers: Record<string, string>): Promise<SseStream> {
  const controller = new AbortController()
  const response = await fetch(url, { headers: { accept: 'text/event-stream', ...headers }, signal: controller.signal })
  const events: SseEvent[] = []
  let retry: number | null = null
  const waiters: { match: (event: SseEvent) => boolean; resolve: (event: SseEvent) => void }[] = []
  const deliver = (event: SseEvent) => {
    events.push(event)
    for (const waiter of [...waiters]) {
      if (!waiter.match(event)) continue
      waiters.splice(waiters.indexOf(waiter), 1)
      waiter.resolve(event)
    }
  }
  const done = (async () => {
    if (!response.body) return events
    const decoder = new TextDecoder()
    let buffer = ''
    try {
      for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
        buffer += decoder.decode(chunk, { stream: true })
        let end: number
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, end)
          buffer = buffer.slice(end + 2)
          let id: string | null = null
          const data: string[] = []
          for (const line of block.split('\n')) {
            if (line.startsWith('id: ')) id = line.slice(4)
            else if (line.startsWith('retry: ')) retry = Number(line.slice(7))
            else if (line.startsWith('data: ')) data.push(line.slice(6))
          }
          if (data.length > 0) deliver({ id, raw: data.join('\n'), data: JSON.parse(data.join('\n')) })
        }
      }
    } catch (err) {
      if (!controller.signal.aborted) throw err
    }
    return events
  })()
  return {
    status: response.status,
    contentType: response.headers.get('content-type'),
    done,
    next: (match = () => true) => {
      const seen = events.find(match)
      if (seen) return Promise.resolve(seen)
      return new Promise((resolve, reject) => {
        waiters.push({ match, resolve })
        done.then(() => reject(new Error('the stream ended before the event came')), reject)
      })
    },
    abort: () => controller.abort(),
    get retry() {
      return retry
    },
  }
}
