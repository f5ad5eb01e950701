/**
 * Servers the cluster lane runs on the host for runner and service pods to
 * reach: an input server that records every connection by the address it came
 * in on and can hold a request until the test lets it go, and a webhook
 * receiver that keeps each delivery's raw bytes for signature checks.
 */
import { createReadStream } from 'node:fs'
import { stat } from 'node:fs/promises'
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import { basename } from 'node:path'
import { eventually } from '../harness/eventually.js'
import type { Teardown } from '../harness/scratch.js'

/** One HTTP server listening on several addresses, sharing one port. */
async function listenOn(t: Teardown, hosts: string[], handler: (req: IncomingMessage, res: ServerResponse) => void, onConnection?: (socket: Socket) => void): Promise<number> {
  let port = 0
  for (const host of hosts) {
    const server: Server = createServer(handler)
    if (onConnection) server.on('connection', onConnection)
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(port, host, () => resolve())
    })
    port = (server.address() as AddressInfo).port
    t.teardown(() => new Promise<void>((resolve) => {
      server.closeAllConnections()
      server.close(() => resolve())
    }))
  }
  return port
}

export interface InputServer {
  /** `http://<host>:<port>/<file's base name>`; `held` names a gate the request waits at (see release). */
  url(host: string, file: string, held?: string): string
  /** A URL on `host` whose request waits at gate `held`, then is redirected (302) to `target`. */
  redirect(host: string, held: string, target: string): string
  /** The local address of every connection accepted so far, in order. */
  readonly connections: string[]
  /** Resolves once a request waiting at gate `held` has arrived. */
  requested(held: string, timeoutMs?: number): Promise<void>
  /** Lets the requests at gate `held` go: served, or cut off with `drop`. */
  release(held: string, how?: 'serve' | 'drop'): void
}

/**
 * Serves `files` by base name on every address of `hosts` (one port).
 * `/held/<gate>/<file>` waits until `release(gate)`, so a test can keep a
 * runner in its fetch phase for exactly as long as it needs, without sleeps;
 * `/redirect/<gate>` waits the same way, then sends the runner elsewhere.
 */
export async function startInputServer(t: Teardown, files: string[], hosts: string[]): Promise<InputServer> {
  const byName = new Map(files.map((file) => [basename(file), file]))
  const connections: string[] = []
  const arrived = new Set<string>()
  const gates = new Map<string, { opened: Promise<'serve' | 'drop'>; open: (how: 'serve' | 'drop') => void }>()
  const gate = (name: string) => {
    let entry = gates.get(name)
    if (!entry) {
      let open!: (how: 'serve' | 'drop') => void
      const opened = new Promise<'serve' | 'drop'>((resolve) => { open = resolve })
      entry = { opened, open }
      gates.set(name, entry)
    }
    return entry
  }
  const serve = async (path: string, res: ServerResponse) => {
    const file = byName.get(decodeURIComponent(path))
    if (!file) {
      // Says whose 404 it is, and over which connection: a request meant for another server that
      // lands here (the cluster lane once saw bodiless 404s on the API's Service) names its path.
      const { localAddress, localPort, remoteAddress, remotePort } = res.req.socket
      res.writeHead(404, { 'content-type': 'text/plain' }).end(`the lane's input server has no file ${JSON.stringify(path)} (connection ${remoteAddress}:${remotePort} -> ${localAddress}:${localPort})\n`)
      return
    }
    const { size } = await stat(file)
    res.writeHead(200, { 'content-type': 'video/mp4', 'content-length': size })
    createReadStream(file).pipe(res)
  }
  const redirects = new Map<string, string>()
  const port = await listenOn(t, hosts, (req, res) => {
    const path = (req.url ?? '/').slice(1)
    const redirect = /^redirect\/([^/]+)$/.exec(path)
    if (redirect) {
      const name = redirect[1]!
      arrived.add(name)
      gate(name).opened.then((how) => {
        if (how === 'serve') res.writeHead(302, { location: redirects.get(name) ?? '/' }).end()
        else res.destroy()
      }).catch(() => res.destroy())
      return
    }
    const held = /^held\/([^/]+)\/(.+)$/.exec(path)
    if (!held) {
      serve(path, res).catch(() => res.destroy())
      return
    }
    arrived.add(held[1]!)
    gate(held[1]!).opened.then(async (how) => {
      if (how === 'serve') await serve(held[2]!, res)
      else res.destroy()
    }).catch(() => res.destroy())
  }, (socket) => connections.push(socket.localAddress ?? '?'))
  return {
    url: (host, file, held) => `http://${host}:${port}/${held ? `held/${held}/` : ''}${encodeURIComponent(basename(file))}`,
    redirect: (host, held, target) => {
      redirects.set(held, target)
      return `http://${host}:${port}/redirect/${encodeURIComponent(held)}`
    },
    connections,
    requested: async (held, timeoutMs = 120_000) => {
      await eventually(`a request at gate ${held}`, () => arrived.has(held), timeoutMs)
    },
    release: (held, how = 'serve') => gate(held).open(how),
  }
}

export interface Delivery {
  headers: IncomingHttpHeaders
  raw: Buffer
}

export interface WebhookReceiver {
  url: string
  readonly deliveries: Delivery[]
  /** The first delivery whose X-Webhook-Id is `whd_<commandId>`. */
  deliveryFor(commandId: string, timeoutMs?: number): Promise<Delivery>
}

/** Answers 204 to every POST and keeps what came. */
export async function startWebhookReceiver(t: Teardown, host: string): Promise<WebhookReceiver> {
  const deliveries: Delivery[] = []
  const port = await listenOn(t, [host], (req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => {
      deliveries.push({ headers: req.headers, raw: Buffer.concat(chunks) })
      res.writeHead(204).end()
    })
  })
  return {
    url: `http://${host}:${port}/hooks/ffkube`,
    deliveries,
    deliveryFor: (commandId, timeoutMs = 120_000) =>
      eventually(`a webhook for ${commandId}`, () => deliveries.find((d) => d.headers['x-webhook-id'] === `whd_${commandId}`), timeoutMs),
  }
}
