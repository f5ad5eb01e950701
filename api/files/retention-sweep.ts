/**
 * Deletes managed files whose retention has passed (their `expires_at`,
 * api/files/retention.ts), the way DELETE /files/:id deletes them: every
 * object (a multi-file output's members and playback copies too), then the
 * record marked is_deleted with storage_url cleared, in its command's result
 * too. Runs in the worker role, so in local mode and in the chart's worker
 * Deployment alike. Several workers may sweep at once: each removal is
 * DELETE's conditional write (is_deleted: false expected), so a file is
 * marked deleted once, and deleting an object twice is harmless.
 */
import { systemClock, type Clock, type Sleep } from '../clock.js'
import type { Logger } from '../logger.js'
import { PollingLoop } from '../polling-loop.js'
import type { FileRepository } from './file-repository.js'

/** Files read and deleted per query: one batch's records stay small, and a stop waits for one file at most. */
export const RETENTION_BATCH = 100
/** Retention is counted in days: a file deleted up to ten minutes after its expiry is on time. */
export const RETENTION_POLL_MS = 10 * 60_000

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
    let deleted = 0
    for (;;) {
      const batch = await this.options.files.expiredFiles(this.#now(), this.#batchSize)
      let failed = 0
      for (const file of batch) {
        if (this.#loop.stopping) return deleted
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
      if (failed > 0) return deleted
      if (batch.length < this.#batchSize) {
        this.options.onSwept?.(deleted)
        return deleted
      }
    }
  }
}
