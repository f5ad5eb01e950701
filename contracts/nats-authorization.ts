/**
 * The NATS users of ADR 0010 (docs/adr/0010-nats-authorization.md), as the
 * nats-server configuration that grants them: one account with JetStream, a
 * service user with the account's every right (api, worker, webhook deliverer,
 * operator, admin CLI) and a runner user that may only publish its commands'
 * status events and log chunks, with JetStream's acks on an inbox of its own.
 * No `no_auth_user`, so an anonymous connection (what a pod's ffmpeg container
 * could open: it holds no credential) is refused at connect.
 *
 * The runner user cannot touch the JetStream API (so it cannot list, read or
 * delete streams), the KV buckets (rate limits), the account-change or
 * completion subjects, nor read anything but its own inbox.
 */
import { LOG_SUBJECT_PREFIX } from './log-chunks.js'
import { STATUS_SUBJECT_PREFIX } from './status-events.js'

export const NATS_SERVICE_USER = 'ffkube'
export const NATS_RUNNER_USER = 'ffkube-runner'

/** The runner's request inbox: JetStream acks its publishes there, the only subjects it may subscribe to. */
export const RUNNER_INBOX_PREFIX = '_INBOX_runner'

export interface NatsPasswords {
  servicePassword: string
  runnerPassword: string
}

/** A password the configuration can quote as it is: no escaping rule to get wrong. */
const PASSWORD = /^[A-Za-z0-9._~+/=-]{16,256}$/

/** The nats-server configuration text (`nats-server -c`) that defines the two users. */
export function natsAuthorization({ servicePassword, runnerPassword }: NatsPasswords): string {
  for (const [name, value] of Object.entries({ servicePassword, runnerPassword })) {
    if (!PASSWORD.test(value)) throw new Error(`${name} must be 16 to 256 characters of A-Z, a-z, 0-9 and . _ ~ + / = -`)
  }
  if (servicePassword === runnerPassword) throw new Error('servicePassword and runnerPassword must differ: a runner would otherwise log in as the service')
  const runnerPermissions =
    `permissions: { publish: { allow: ["${STATUS_SUBJECT_PREFIX}.*", "${LOG_SUBJECT_PREFIX}.*"] }, ` +
    `subscribe: { allow: ["${RUNNER_INBOX_PREFIX}.>"] } }`
  return [
    'accounts {',
    '  FFKUBE {',
    '    jetstream: enabled',
    '    users: [',
    `      { user: "${NATS_SERVICE_USER}", password: "${servicePassword}" }`,
    `      { user: "${NATS_RUNNER_USER}", password: "${runnerPassword}", ${runnerPermissions} }`,
    '    ]',
    '  }',
    '}',
    '',
  ].join('\n')
}

/** How the service user connects: `user` and `pass` of the nats client. */
export interface NatsCredentials {
  user: string
  pass: string
}

/**
 * The service user's credentials from NATS_USER and NATS_PASSWORD (the api,
 * worker, webhooks and operator processes, and the admin CLI): both, for a
 * server with users, or neither, for an open one. Never a runner's: the
 * operator gives runner pods NATS_URL only.
 */
export function natsCredentials(env: NodeJS.ProcessEnv, ErrorType: new (message: string) => Error = Error): NatsCredentials | undefined {
  const user = env.NATS_USER?.trim() || undefined
  const pass = env.NATS_PASSWORD || undefined
  if (!user && !pass) return undefined
  if (!user || !pass) throw new ErrorType(`NATS_USER and NATS_PASSWORD must be set together: ${user ? 'NATS_PASSWORD' : 'NATS_USER'} is unset`)
  return { user, pass }
}
