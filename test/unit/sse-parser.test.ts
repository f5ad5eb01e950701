import t from 'tap'
import { SseParser } from '../../client/sse-parser.js'

t.test('SseParser', async (t) => {
  const cases: [string, string[], { id: string | null; event: string; data: string }[]][] = [
    ['one event with an id', ['id: 3\ndata: {"a":1}\n\n'], [{ id: '3', event: 'message', data: '{"a":1}' }]],
    ['an event split across chunks, mid-line', ['id: 4\nda', 'ta: x\n', '\n'], [{ id: '4', event: 'message', data: 'x' }]],
    ['CRLF and a CRLF split between chunks', ['data: a\r', '\n\r\n'], [{ id: null, event: 'message', data: 'a' }]],
    ['comments (keep-alive) are ignored', [': keep-alive\n\ndata: b\n\n'], [{ id: null, event: 'message', data: 'b' }]],
    ['data lines join with a newline; no space after the colon is fine', ['data:x\ndata: y\n\n'], [{ id: null, event: 'message', data: 'x\ny' }]],
    ['an event without data is dropped, its id kept for the next', ['id: 7\n\ndata: c\n\n'], [{ id: '7', event: 'message', data: 'c' }]],
    ['a named event', ['event: ping\ndata: 1\n\n'], [{ id: null, event: 'ping', data: '1' }]],
    ['an event without its closing blank line is not complete', ['data: d\n'], []],
  ]
  for (const [name, chunks, expected] of cases) {
    t.test(name, async (t) => {
      const parser = new SseParser()
      t.same(chunks.flatMap((chunk) => parser.push(chunk)), expected)
    })
  }
})
