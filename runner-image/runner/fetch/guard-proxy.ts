/**
 * A forward HTTP proxy on loopback that yt-dlp is told to use (`--proxy`), so
 * every connection yt-dlp makes — the page, each redirect it follows, every
 * manifest and segment — goes through the same pinned, checked lookup as the
 * runner's own fetches. yt-dlp does its own networking; without this, only
 * the first URL could be checked.
 *
 * Plain http requests arrive in absolute form and are forwarded; https
 * arrives as CONNECT host:port and is tunnelled after the host is checked.
 * Refusals are remembered so the caller can report INPUT_FORBIDDEN_ADDRESS
 * instead of yt-dlp's generic "HTTP Error 403".
 */
import { createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http'
import { connect as netConnect, type AddressInfo, type Socket } from 'node:net'
import type { Duplex } from 'node:stream'
import { checkUrl, type UrlGuardOptions } from '../../../contracts/url-guard.js'
import { pinnedLookup, systemResolver, UrlGuardError, type Resolver } from '../../../contracts/url-guard-fetch.js'

export interface GuardProxy {
  /** `http://127.0.0.1:<port>` */
  url: string
  /** Reasons of every refused connection since the last call, oldest first; clears the list. */
  takeRefusals(): string[]
  close(): Promise<void>
}

const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'proxy-authorization', 'proxy-authenticate', 'te', 'trailer', 'transfer-encoding', 'upgrade'])

export async function startGuardProxy(options: UrlGuardOptions & { resolve?: Resolver }): Promise<GuardProxy> {
  const lookup = pinnedLookup(options.resolve ?? systemResolver, options)
  let refusals: string[] = []
  const sockets = new Set<Socket | Duplex>()

  const refuse = (reason: string): string => {
    refusals.push(reason)
    return reason
  }

  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const verdict = checkUrl(req.url ?? '', options)
    if (!verdict.ok) {
      res.writeHead(403, { 'content-type': 'text/plain' }).end(refuse(verdict.reason))
      return
    }
    const headers = Object.fromEntries(Object.entries(req.headers).filter(([name]) => !HOP_BY_HOP.has(name)))
    const upstream = httpRequest(verdict.url, { method: req.method, headers, agent: false, lookup }, (answer) => {
      const passed = Object.fromEntries(Object.entries(answer.headers).filter(([name]) => !HOP_BY_HOP.has(name)))
      res.writeHead(answer.statusCode ?? 502, passed)
      answer.pipe(res)
    })
    upstream.once('error', (error) => {
      const reason = error instanceof UrlGuardError && error.code === 'FORBIDDEN_ADDRESS' ? refuse(error.message) : error.message
      if (!res.headersSent) res.writeHead(error instanceof UrlGuardError && error.code === 'FORBIDDEN_ADDRESS' ? 403 : 502).end(reason)
      else res.destroy()
    })
    req.pipe(upstream)
  })

  server.on('connect', (req: IncomingMessage, client: Duplex, head: Buffer) => {
    sockets.add(client)
    client.once('close', () => sockets.delete(client))
    client.on('error', () => client.destroy())
    const verdict = checkUrl(`https://${req.url ?? ''}/`, options)
    if (!verdict.ok) {
      client.end(`HTTP/1.1 403 Forbidden\r\ncontent-type: text/plain\r\n\r\n${refuse(verdict.reason)}`)
      return
    }
    const port = Number(verdict.url.port || 443)
    const upstream = netConnect({ host: verdict.host, port, lookup })
    sockets.add(upstream)
    upstream.once('close', () => sockets.delete(upstream))
    upstream.once('connect', () => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n')
      if (head.length > 0) upstream.write(head)
      upstream.pipe(client)
      client.pipe(upstream)
    })
    upstream.once('error', (error) => {
      const forbidden = error instanceof UrlGuardError && error.code === 'FORBIDDEN_ADDRESS'
      if (forbidden) refuse(error.message)
      client.end(`HTTP/1.1 ${forbidden ? '403 Forbidden' : '502 Bad Gateway'}\r\n\r\n`)
    })
  })

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    takeRefusals: () => {
      const taken = refusals
      refusals = []
      return taken
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy()
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}
