import { randomBytes } from 'node:crypto'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { connect, type ConnectionOptions } from 'nats'
import { startNatsServer, type LocalNats } from '../../api/local/nats-server.js'
import { NATS_RUNNER_USER, NATS_SERVICE_USER, natsAuthorization } from '../../contracts/nats-authorization.js'
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

/** A NATS server that knows ADR 0010's users: how each connects. */
export interface AuthorizedNats extends TestNats {
  service: { user: string; pass: string }
  runner: { user: string; pass: string }
}

/** NATS_URL when set (and no `host` asked for), otherwise a fresh nats-server with JetStream on a free port. */
export async function startNats(t: Teardown, options: ListenOptions = {}): Promise<TestNats> {
  const external = options.host ? undefined : process.env.NATS_URL
  if (external) return { url: external }
  return startLocalNats(t, options.host)
}

/**
 * A fresh nats-server with JetStream and the users of contracts/nats-authorization.ts
 * (random passwords), never NATS_URL's server: its users are not ours to know.
 */
export async function startAuthorizedNats(t: Teardown): Promise<AuthorizedNats> {
  const passwords = { servicePassword: randomBytes(24).toString('base64url'), runnerPassword: randomBytes(24).toString('base64url') }
  const dir = await scratchDir(t, 'ffkube-nats-auth-')
  const configFile = join(dir, 'authorization.conf')
  await writeFile(configFile, natsAuthorization(passwords))
  return {
    ...(await startLocalNats(t, undefined, configFile)),
    service: { user: NATS_SERVICE_USER, pass: passwords.servicePassword },
    runner: { user: NATS_RUNNER_USER, pass: passwords.runnerPassword },
  }
}

async function startLocalNats(t: Teardown, host: string | undefined, configFile?: string): Promise<TestNats> {
  const dir = await scratchDir(t, 'ffkube-nats-')
  let local: LocalNats = await startNatsServer(dir, host, -1, configFile)
  t.teardown(() => local.server.stop())
  const port = Number(new URL(local.url).port)
  return {
    url: local.url,
    stop: () => local.server.stop(),
    restart: async () => {
      await local.server.stop()
      local = await startNatsServer(dir, host, port, configFile)
    },
  }
}

/** Creates the status and log streams as the service does at its start: runners only publish to them. */
export async function createServiceStreams(t: Teardown, nats: TestNats, as: Pick<ConnectionOptions, 'user' | 'pass'> = {}): Promise<void> {
  const nc = await connect({ servers: nats.url, ...as })
  t.teardown(() => nc.close())
  await ensureStream(nc, STATUS_STREAM_DEFINITION)
  await ensureStream(nc, LOG_STREAM_DEFINITION)
}
