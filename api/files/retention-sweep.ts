/**
 * Deletes managed files whose retention has passed (their `expires_at`,
 * api/files/retention.ts), the way DELETE /files/:id deletes them: every
 * object (a multi-file output's members and playback copies too), then the
 * record marked is_deleted with storage_url cleared, in its command's result
 * too. Runs in the worker role, so in local mode and in the chart's worker
 * Deployment alike. Several workers may sweep at once: each removal is
 * DELETE's conditional write (is_deleted: false expected), so a file is
 * marked deleted once, and deleting an object twice is harmless.
 *
 * A round asks for the files of its due days by name (`expires_on`,
 * retention.ts's expiryFields), from the first day that may still hold one to
 * today, so it reads what is due rather than every live file. No file is
 * stored with an expiry in the past, so once a round has deleted every file
 * due before today, those days stay empty: the next round starts at today.
 * A worker that starts looks back over the longest retention there is.
 */
import { systemClock, type Clock, type Sleep } from '../clock.js'
import type { Logger } from '../logger.js'
import { PollingLoop } from '../polling-loop.js'
import type { FileRepository } from './file-repository.js'
import { dayLists, dayOf, MAX_RETENTION_DAYS_CEILING } from './retention.js'

/** Files read and deleted per query: one batch's records stay small, and a stop waits for one file at most. */
export const RETENTION_BATCH = 100
/** Retention is counted in days: a file deleted up to ten minutes after its expiry is on time. */
export const RETENTION_POLL_MS = 10 * 60_000
/** Days named in one query: a worker's first round covers ten years in ten queries, each an index lookup per day. */
export const DAYS_PER_QUERY = 366
const DAY_MS = 86_400_000

export interface RetentionSweepOptions {
  files: Pick<FileRepository, 'expiredFiles' | 'deleteManaged'>
  logger: Logger
  now?: Clock
  sleep?: Sleep
  pollIntervalMs?: number
  batchSize?: number
  /** Told after each sweep that looked for every expired file, with how many it deleted (the worker's metrics). */
  onSwept?: (expired: number) => void
}

export class RetentionSweep {
  readonly #loop: PollingLoop
  readonly #now: Clock
  readonly #batchSize: number
  readonly #log: Logger
  /** The first day that may still hold a live file due for deletion (`YYYY-MM-DD`); null until the first round. */
  #firstDueDay: string | null = null

  constructor(private readonly options: RetentionSweepOptions) {
    this.#now = options.now ?? systemClock
    this.#batchSize = options.batchSize ?? RETENTION_BATCH
    this.#log = options.logger.child({ component: 'retention-sweep' })
    this.#loop = new PollingLoop(
      { drain: () => this.sweep() },
      { pollIntervalMs: options.pollIntervalMs ?? RETENTION_POLL_MS, log: this.#log, roundFailed: 'retention sweep round failed', ...(options.sleep ? { sleep: options.sleep } : {}) },
    )
  }

  /** Sweeps now, then every poll interval. */
  start(): void {
    this.#loop.start()
  }

  /** Stops sweeping, after the file in hand. */
  stop(): Promise<void> {
    return this.#loop.stop()
  }

  /**
   * Deletes every managed file expired at this moment, batch by batch;
   * returns how many this call marked deleted (files another sweep marked
   * first are not counted). A file whose deletion fails is logged and left
   * for the next round, which ends this one after its batch so a file that
   * keeps failing cannot hold the loop.
   */
  async sweep(): Promise<number> {
    const startedAt = this.#now()
    const today = dayOf(startedAt)
    const firstDueDay = this.#firstDueDay ?? dayOf(new Date(startedAt.getTime() - MAX_RETENTION_DAYS_CEILING * DAY_MS))
    let deleted = 0
    for (const days of dayLists(firstDueDay, today, DAYS_PER_QUERY)) {
      const swept = await this.#sweepDays(days)
      deleted += swept.deleted
      if (!swept.done) return deleted
    }
    // Every file due before today was due at startedAt, and all of them are gone.
    this.#firstDueDay = today
    this.options.onSwept?.(deleted)
    return deleted
  }

  /** Deletes the expired files of `days`; done when none is left (no deletion failed, the round was not stopped). */
  async #sweepDays(days: readonly string[]): Promise<{ deleted: number; done: boolean }> {
    let deleted = 0
    for (;;) {
      const batch = await this.options.files.expiredFiles(days, this.#now(), this.#batchSize)
      let failed = 0
      for (const file of batch) {
        if (this.#loop.stopping) return { deleted, done: false }
        try {
          if (await this.options.files.deleteManaged(file, this.#log)) {
            deleted += 1
            this.#log.info({ file_id: file._id, account_id: file.account_id, command_id: file.command_id, expires_at: file.expires_at }, 'file expired')
          }
        } catch (err) {
          failed += 1
          this.#log.warn({ err, file_id: file._id, account_id: file.account_id }, 'could not delete an expired file; the next round retries it')
        }
      }
      if (failed > 0) return { deleted, done: false }
      if (batch.length < this.#batchSize) return { deleted, done: true }
    }
  }
}
