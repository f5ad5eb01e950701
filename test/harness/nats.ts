import { startNatsServer } from '../../api/local/nats-server.js'
import { scratchDir, type Teardown } from './scratch.js'

/** A NATS server with JetStream. */
export interface TestNats {
  url: string
  /** Stops the server (to test outages); undefined when it is an external one. */
  stop?: () => Promise<void>
}

/** NATS_URL when set, otherwise a fresh nats-server with JetStream on a free port. */
export async function startNats(t: Teardown): Promise<TestNats> {
  const external = process.env.NATS_URL
  if (external) return { url: external }
  const local = await startNatsServer(await scratchDir(t, 'ffkube-nats-'))
  t.teardown(() => local.server.stop())
  return { url: local.url, stop: () => local.server.stop() }
}
