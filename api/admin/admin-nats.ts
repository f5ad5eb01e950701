import { readdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { connect, type NatsConnection } from 'nats'
import type { Config } from '../config.js'

const CONNECT_TIMEOUT_MS = 2_000

/** The pid in a ports file's name `nats-server_<pid>.ports`, when that process is alive. */
function livePid(file: string): number | null {
  const pid = Number(/^nats-server_(\d+)\.ports$/.exec(file)?.[1])
  if (!Number.isInteger(pid) || pid <= 0) return null
  try {
    process.kill(pid, 0)
    return pid
  } catch {
    return null
  }
}

/** The URL of the nats-server a running `npm start` keeps under the data dir (nats-server.ts writes its ports file there). */
async function runningLocalNatsUrl(dataDir: string): Promise<string | undefined> {
  const portsDir = join(dataDir, 'nats', 'ports')
  const files = await readdir(portsDir).catch(() => [])
  for (const file of files) {
    if (livePid(file) === null) continue
    const ports = JSON.parse(await readFile(join(portsDir, file), 'utf8').catch(() => '{}')) as { nats?: string[] }
    if (ports.nats?.[0]) return ports.nats[0]
  }
  return undefined
}

/**
 * The NATS the service's replicas listen on, for the admin CLI to announce
 * revocations and plan changes (account-changes.ts): NATS_URL when set, else
 * the nats-server of a running `npm start`. Undefined when none answers: the
 * change then reaches the replicas when their cached entries expire.
 */
export async function connectAdminNats(config: Config): Promise<NatsConnection | undefined> {
  // The service user's credentials are for NATS_URL's server; `npm start`'s own server has no users.
  const [url, credentials] = config.natsUrl ? [config.natsUrl, config.natsCredentials] : [await runningLocalNatsUrl(config.dataDir), undefined]
  if (!url) return undefined
  return connect({ servers: url, ...credentials, timeout: CONNECT_TIMEOUT_MS, name: 'ffkube-admin', maxReconnectAttempts: 0 }).catch(() => undefined)
}
