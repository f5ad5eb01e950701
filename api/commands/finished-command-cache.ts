import { isTerminalStatus } from '../../contracts/command-types.js'
import type { AccountChange, AccountChangeListener } from '../accounts/account-changes.js'
import { systemClock, type Clock } from '../clock.js'
import type { CommandReadRecorder } from '../metrics/service-metrics.js'
import type { CommandPollResponse } from './schemas.js'

/**
 * How long a replica serves a finished command whose managed outputs could
 * still be deleted without hearing of a change: the bound on showing a
 * deleted output as live when the deletion's NATS message was lost (as
 * KEY_CACHE_TTL_MS bounds a revoked key).
 */
export const DELETABLE_ENTRY_TTL_MS = 5_000

/** Past this many bytes of answers (their JSON), the least recently read go first: a bound, not a policy. */
const MAX_BYTES = 32 * 1024 * 1024

interface Entry {
  accountId: string
  view: CommandPollResponse
  bytes: number
  /** Infinity for an answer nothing can change any more. */
  expiresAt: number
}

/**
 * Whether nothing can change the answer any more: a command changes after it
 * ended only when one of its managed outputs is deleted (DELETE /files/:id,
 * DELETE /commands/:id/files, the retention sweep: CommandRepository#markOutputDeleted).
 * A FAILED command has no outputs; an output in a customer's bucket is never
 * deleted by the service; a deleted one stays deleted.
 */
function settled(view: CommandPollResponse): boolean {
  return Object.values(view.output_files ?? {}).every((output) => output.storage_location === 'EXTERNAL' || output.is_deleted)
}

/**
 * GET /commands/:id answers of finished commands (SUCCESS or FAILED), kept per
 * process so that polling a finished command costs no store read. A command
 * still QUEUED or PROCESSING is never kept: another replica's projector may
 * end it at any moment, and a client that saw it end (by an event stream or
 * a webhook) must never be shown it running again.
 *
 * An answer nothing can change is kept until memory presses. One whose
 * managed outputs may still be deleted is dropped when the deletion is
 * announced on the account-change feed (heard at once in the deleting
 * process, over NATS in the others), and after DELETABLE_ENTRY_TTL_MS in any
 * case; while the feed is lost (NATS disconnected) such answers are not kept.
 * A read that overlapped an announcement is not kept, so a read that began
 * before a deletion cannot put its answer back after the deletion dropped it.
 * Each entry names its account: another account's request never hits it.
 */
export class FinishedCommandCache implements AccountChangeListener {
  readonly #now: Clock
  readonly #metrics: CommandReadRecorder | undefined
  readonly #maxBytes: number
  /** By command id, least recently read first. */
  readonly #entries = new Map<string, Entry>()
  #bytes = 0
  /** Bumped by every announcement heard: a read that started in an older generation may be stale. */
  #generation = 0
  #feedLive = true

  constructor(options: { now?: Clock | undefined; metrics?: CommandReadRecorder | undefined; maxBytes?: number } = {}) {
    this.#now = options.now ?? systemClock
    this.#metrics = options.metrics
    this.#maxBytes = options.maxBytes ?? MAX_BYTES
  }

  /** The account's command as GET shows it: from the cache when it holds it, else from `load` (the store). */
  async read(accountId: string, commandId: string, load: () => Promise<CommandPollResponse | null>): Promise<CommandPollResponse | null> {
    const entry = this.#entries.get(commandId)
    if (entry && entry.accountId === accountId && entry.expiresAt > this.#now().getTime()) {
      // Read again: it goes to the end of the eviction order.
      this.#entries.delete(commandId)
      this.#entries.set(commandId, entry)
      this.#metrics?.commandRead('cache')
      return entry.view
    }
    this.#metrics?.commandRead('store')
    const generation = this.#generation
    const view = await load()
    if (view && isTerminalStatus(view.status) && generation === this.#generation) this.#keep(accountId, commandId, view)
    return view
  }

  changed(change: AccountChange): void {
    if (change.kind !== 'command') return
    this.#generation++
    this.#drop(change.command_id)
  }

  feedLost(): void {
    this.#feedLive = false
    this.#generation++
    for (const [commandId, entry] of this.#entries) if (entry.expiresAt !== Infinity) this.#drop(commandId)
  }

  feedRestored(): void {
    this.#feedLive = true
  }

  #keep(accountId: string, commandId: string, view: CommandPollResponse): void {
    const forever = settled(view)
    if (!forever && !this.#feedLive) return
    const bytes = JSON.stringify(view).length
    if (bytes > this.#maxBytes) return
    this.#drop(commandId)
    this.#entries.set(commandId, { accountId, view, bytes, expiresAt: forever ? Infinity : this.#now().getTime() + DELETABLE_ENTRY_TTL_MS })
    this.#bytes += bytes
    for (const oldest of this.#entries.keys()) {
      if (this.#bytes <= this.#maxBytes) break
      this.#drop(oldest)
    }
  }

  #drop(commandId: string): void {
    const entry = this.#entries.get(commandId)
    if (!entry) return
    this.#entries.delete(commandId)
    this.#bytes -= entry.bytes
  }
}
