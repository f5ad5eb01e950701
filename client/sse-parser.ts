/** One Server-Sent Event as the wire carries it. */
export interface SseMessage {
  /** The `id:` field, or null when the event had none. */
  id: string | null
  /** `event:`; `message` when unset. */
  event: string
  /** The `data:` lines joined with newlines. */
  data: string
}

/**
 * Splits a text/event-stream into events, as the HTML standard's parsing
 * rules say: CRLF, CR or LF line ends, `field: value` with one optional
 * space, comment lines (`: keep-alive`) ignored, an event ends at a blank
 * line, an event without data is dropped. Pure: feed it decoded text.
 */
export class SseParser {
  #buffer = ''
  #id: string | null = null
  #event = ''
  #data: string[] = []

  /** Takes the next piece of text; returns the events it completed. */
  push(text: string): SseMessage[] {
    this.#buffer += text
    const done: SseMessage[] = []
    for (;;) {
      const end = this.#buffer.search(/\r\n|\r|\n/)
      if (end < 0) break
      // A CR at the very end may be the first half of a CRLF still on the wire.
      if (this.#buffer[end] === '\r' && end === this.#buffer.length - 1) break
      const line = this.#buffer.slice(0, end)
      this.#buffer = this.#buffer.slice(end + (this.#buffer.startsWith('\r\n', end) ? 2 : 1))
      const message = this.#line(line)
      if (message) done.push(message)
    }
    return done
  }

  #line(line: string): SseMessage | null {
    if (line === '') {
      const message = this.#data.length > 0 ? { id: this.#id, event: this.#event || 'message', data: this.#data.join('\n') } : null
      this.#event = ''
      this.#data = []
      return message
    }
    if (line.startsWith(':')) return null
    const colon = line.indexOf(':')
    const field = colon < 0 ? line : line.slice(0, colon)
    let value = colon < 0 ? '' : line.slice(colon + 1)
    if (value.startsWith(' ')) value = value.slice(1)
    if (field === 'data') this.#data.push(value)
    else if (field === 'event') this.#event = value
    else if (field === 'id' && !value.includes('\0')) this.#id = value
    return null
  }
}
