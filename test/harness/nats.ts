import { connect } from 'nats'
import { startNatsServer, type LocalNats } from '../../api/local/nats-server.js'
import { ensureStream, LOG_STREAM_DEFINITION, STATUS_STREAM_DEFINITION } from '../../contracts/nats-streams.js'
import type { ListenOptions } from './mongo.js'
import { scratchDir, type Teardown } from './scratch.js'

/** A NATS server with JetStream. */
export interface TestNats {
  url: string
  /** Stops the server (to test outages); undefined when it is an external one. */
  stop?: () => Promise<void>
  /** Stops the server and starts it again on the same port and JetStream store; undefined when external. */
  restart?: () => Promise<void>
}

/** NATS_URL when set (and no `host` asked for), otherwise a fresh nats-server with JetStream on a free port. */
export async function startNats(t: Teardown, options: ListenOptions = {}): Promise<TestNats> {
  const external = options.host ? undefined : process.env.NATS_URL
  if (external) return { url: external }
  const dir = await scratchDir(t, 'ffkube-nats-')
  let local: LocalNats = await startNatsServer(dir, options.host)
  t.teardown(() => local.server.stop())
  const port = Number(new URL(local.url).port)
  return {
    url: local.url,
    stop: () => local.server.stop(),
    restart: async () => {
      await local.server.stop()
      local = await startNatsServer(dir, options.host, port)
    },
  }
}

/** Creates the status and log streams as the service does at its start: runners only publish to them. */
export async function createServiceStreams(t: Teardown, nats: TestNats): Promise<void> {
  const nc = await connect({ servers: nats.url })
  t.teardown(() => nc.close())
  await ensureStream(nc, STATUS_STREAM_DEFINITION)
  await ensureStream(nc, LOG_STREAM_DEFINITION)
}
