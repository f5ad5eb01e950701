import { JSONCodec, type NatsConnection, type Subscription } from 'nats'

/**
 * The NATS subject on which a write to an account, one of its keys, or one of
 * its finished commands (an output deleted) is announced, so every API
 * replica drops what it cached of it. Core NATS, not
 * a KV watch or a stream: the store stays the only record and the message
 * only says "forget this"; a replica that was disconnected drops its whole
 * cache instead of replaying what it missed (key-cache.ts), so there is
 * nothing to replay and no stream to keep.
 */
export const ACCOUNT_CHANGES_SUBJECT = 'ffkube.accounts.changed'

/**
 * What changed: one key (revoked), anything about the account itself (its
 * plan), or a command that had ended (one of its outputs deleted:
 * api/commands/finished-command-cache.ts).
 */
export type AccountChange = { kind: 'key'; key_id: string } | { kind: 'account'; account_id: string } | { kind: 'command'; command_id: string }

/** What a cache of accounts hears from the feed. */
export interface AccountChangeListener {
  changed(change: AccountChange): void
  /** Changes may be missed from now on (NATS disconnected): trust nothing cached. */
  feedLost(): void
  /** Changes are heard again: what is read from now on may be cached. */
  feedRestored(): void
}

/** Where a lost announcement is reported: the process's pino logger, or the admin CLI's stderr. */
export interface ChangeLog {
  warn(details: object, message: string): void
}

const codec = JSONCodec<AccountChange>()

/** How long an announcement waits for NATS to confirm it has the message. */
const ANNOUNCE_FLUSH_MS = 1_000

async function flushWithin(nats: NatsConnection, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`NATS did not confirm within ${ms} ms`)), ms)
  })
  try {
    await Promise.race([nats.flush(), timeout])
  } finally {
    clearTimeout(timer)
  }
}

function isAccountChange(value: unknown): value is AccountChange {
  const change = value as Partial<Record<string, unknown>> | null
  return (
    (change?.kind === 'key' && typeof change.key_id === 'string') ||
    (change?.kind === 'account' && typeof change.account_id === 'string') ||
    (change?.kind === 'command' && typeof change.command_id === 'string')
  )
}

/**
 * The feed of account changes of this process: writers announce, listeners in
 * this process hear the change at once (before the write's caller goes on) and
 * every other replica hears it over NATS. Without NATS (a single process, or
 * the admin CLI when it cannot reach one) only this process hears it; other
 * replicas then learn it when their cache entries expire (KEY_CACHE_TTL_MS).
 */
export class AccountChanges {
  readonly #listeners = new Set<AccountChangeListener>()
  readonly #nats: NatsConnection | undefined
  readonly #log: ChangeLog
  #subscription: Subscription | undefined

  private constructor(nats: NatsConnection | undefined, log: ChangeLog) {
    this.#nats = nats
    this.#log = log
  }

  /** Opens the feed; `listen` is false for a process that only writes (the admin CLI). */
  static async open(nats: NatsConnection | undefined, log: ChangeLog, { listen = true } = {}): Promise<AccountChanges> {
    const changes = new AccountChanges(nats, log)
    if (nats && listen) await changes.#subscribe(nats)
    return changes
  }

  listen(listener: AccountChangeListener): void {
    this.#listeners.add(listener)
  }

  /** Tells this process's listeners, then every replica. Never throws: a lost message is bounded by the cache's TTL. */
  async announce(change: AccountChange): Promise<void> {
    this.#tell(change)
    if (!this.#nats || this.#nats.isClosed()) return
    try {
      this.#nats.publish(ACCOUNT_CHANGES_SUBJECT, codec.encode(change))
      // Sent before the write's caller is answered: "revoked" means the other replicas have been told.
      // Bounded: while NATS is away a flush waits for its return, and a revocation must not wait with it.
      await flushWithin(this.#nats, ANNOUNCE_FLUSH_MS)
    } catch (error) {
      this.#log.warn({ err: error, change }, 'account change not announced over NATS; other replicas learn it when their cached entry expires')
    }
  }

  async close(): Promise<void> {
    this.#subscription?.unsubscribe()
    this.#listeners.clear()
  }

  #tell(change: AccountChange): void {
    for (const listener of this.#listeners) listener.changed(change)
  }

  async #subscribe(nats: NatsConnection): Promise<void> {
    this.#subscription = nats.subscribe(ACCOUNT_CHANGES_SUBJECT, {
      callback: (error, message) => {
        if (error) return
        let change: unknown
        try {
          change = codec.decode(message.data)
        } catch {
          return
        }
        if (isAccountChange(change)) this.#tell(change)
      },
    })
    // The subscription is on the server before anything is cached on the strength of it.
    await nats.flush()
    this.#followStatus(nats).catch((error: unknown) => {
      this.#log.warn({ err: error }, 'stopped following the NATS connection; nothing is cached from now on')
      for (const listener of this.#listeners) listener.feedLost()
    })
  }

  async #followStatus(nats: NatsConnection): Promise<void> {
    for await (const status of nats.status()) {
      if (status.type === 'disconnect') {
        for (const listener of this.#listeners) listener.feedLost()
      } else if (status.type === 'reconnect') {
        // The client re-sent the subscription on reconnecting; a flush makes sure the server has it.
        const restored = await nats.flush().then(
          () => true,
          () => false,
        )
        if (restored) for (const listener of this.#listeners) listener.feedRestored()
      }
    }
    // The connection is closed for good (it gave up reconnecting): no change will be heard again.
    for (const listener of this.#listeners) listener.feedLost()
  }
}
