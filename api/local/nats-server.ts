import { mkdir, readdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { ChildServer } from './child-server.js'
import { toolPath } from './tools.js'

/** A nats-server with JetStream listening on a loopback port. */
export interface LocalNats {
  url: string
  server: ChildServer
}

/**
 * Starts nats-server with JetStream storing under `dataDir`. `-p -1` lets the
 * server pick a free port, which it reports in a ports file named after its pid.
 * `host` is the address to listen on (loopback unless a test needs pods to reach it);
 * `port` a fixed port instead, as a restart on the same data dir keeps its clients' URL;
 * `configFile` a configuration for what the flags do not say (users: contracts/nats-authorization.ts).
 */
export async function startNatsServer(dataDir: string, host = '127.0.0.1', port = -1, configFile?: string): Promise<LocalNats> {
  const portsDir = join(dataDir, 'ports')
  await mkdir(portsDir, { recursive: true })
  const server = ChildServer.start({
    name: 'nats-server',
    command: toolPath('nats-server'),
    args: [...(configFile ? ['-c', configFile] : []), '-a', host, '-p', String(port), '-js', '-sd', join(dataDir, 'jetstream'), '--ports_file_dir', portsDir],
  })
  const url = await server.waitUntilReady(async () => {
    const name = (await readdir(portsDir)).find((file) => file === `nats-server_${server.pid}.ports`)
    if (!name) return undefined
    const ports = JSON.parse(await readFile(join(portsDir, name), 'utf8')) as { nats?: string[] }
    return ports.nats?.[0]
  })
  return { url, server }
}
