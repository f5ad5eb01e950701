import t from 'tap'
import { createServer, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Teardown } from '../harness/scratch.js'
import { commandEvents, StreamIdleError, type CommandEvent } from '../../client/index.js'

/**
 * A server that answers the events route with one event and then goes silent
 * without closing the connection: a peer that went away as a replaced pod
 * behind a Service does.
 */
async function silentServer(t: Teardown) {
  const open: ServerResponse[] = []
  const lastEventIds: Array<string | undefined> = []
  const server = createServer((request, response) => {
    lastEventIds.push(request.headers['last-event-id'] as string | undefined)
    response.writeHead(200, { 'content-type': 'text/event-stream' })
    response.write(`id: 7\ndata: ${JSON.stringify({ command_id: 'c1', status: 'PROCESSING' })}\n\n`)
    open.push(response)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => {
    for (const response of open) response.destroy()
    server.close()
  })
  return { baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, open, lastEventIds }
}

t.test('a stream that goes silent without closing ends in StreamIdleError after the event it sent, and the caller resumes from that id', async (t) => {
  const server = await silentServer(t)
  const seen: CommandEvent[] = []
  const failure = await (async () => {
    try {
      for await (const event of commandEvents('c1', { baseUrl: server.baseUrl, idleTimeoutMs: 2_000 })) seen.push(event)
    } catch (error) {
      return error
    }
  })()
  t.ok(failure instanceof StreamIdleError, `the reader gave up on the silent stream: ${String(failure)}`)
  t.same(seen.map((e) => e.id), ['7'], 'the event sent before the silence was delivered')
  const resumed = commandEvents('c1', { baseUrl: server.baseUrl, idleTimeoutMs: 2_000, lastEventId: seen[0]!.id! })
  const next = await resumed.next()
  t.equal(next.value?.id, '7')
  await resumed.return()
  t.same(server.lastEventIds, [undefined, '7'], 'the second request carried Last-Event-ID')
})
