/**
 * The fault set's watcher (test/cluster/command-watch.ts) resumes a stream
 * that went silent, as one from a deleted API pod can: a loopback server
 * answers the first request with PROCESSING and then nothing, the resumed
 * one with SUCCESS.
 */
import { createServer, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import t from 'tap'
import { watchCommand } from '../cluster/command-watch.js'

t.test('a silent event stream is resumed with Last-Event-ID, and the watch ends on the resumed stream\'s terminal event', async (t) => {
  const requests: Array<string | undefined> = []
  const silent: ServerResponse[] = []
  const server = createServer((req, res) => {
    requests.push(req.headers['last-event-id'] as string | undefined)
    res.writeHead(200, { 'content-type': 'text/event-stream' })
    if (requests.length === 1) {
      res.write(`id: 1\ndata: ${JSON.stringify({ command_id: 'c1', status: 'PROCESSING' })}\n\n`)
      silent.push(res)
      return
    }
    res.end(`id: 2\ndata: ${JSON.stringify({ command_id: 'c1', status: 'SUCCESS' })}\n\n`)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => {
    silent.forEach((res) => res.destroy())
    server.close(() => resolve())
  }))
  const { port } = server.address() as AddressInfo
  const watch = watchCommand({ baseUrl: `http://127.0.0.1:${port}`, apiKey: 'k' }, 'c1', { poll: false, idleMs: 300 })
  t.teardown(() => watch.stop())
  await watch.ended
  t.same(watch.streamed, ['PROCESSING', 'SUCCESS'])
  t.same(requests, [undefined, '1'], 'the second request resumed after the last event seen')
  t.equal(watch.reconnects, 1)
})
