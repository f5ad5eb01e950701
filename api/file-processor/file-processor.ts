/**
 * Finishes the files the API accepted as PROCESSING: a store-file URL is
 * fetched through the private-network guard, streamed to the managed bucket
 * and probed; an upload already in the bucket is probed where it lies. Each
 * ends STORED (media facts, storage_url) or FAILED (error_status,
 * error_message).
 *
 * The work list is the `files` records themselves (their processing_* fields,
 * read and written through FileRepository): a file is claimed for a lease,
 * the lease is extended while the work runs, and the result is written only
 * if the claim still holds. A processor that dies leaves its file to be
 * retaken when the lease ends; one that throws (the store unreachable) too.
 *
 * ffprobe reads a user's bytes, so it runs where those bytes cannot reach
 * this process's secrets (database URL, storage credentials, encryption
 * keys): in the sandbox (contracts/sandbox.ts), with no network and only the
 * file's own temporary folder in sight. An upload is therefore copied out of
 * the bucket first instead of being read over a presigned URL.
 */
import { createReadStream } from 'node:fs'
import { mkdir, rm, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { metaOfProbe, probeArgs, PROBE_TIMEOUT_MS } from '../../contracts/media-probe.js'
import { mimeTypeForFilename, type MediaMeta } from '../../contracts/output-file-meta.js'
import type { SandboxHost } from '../../contracts/sandbox.js'
import { runTool } from '../../contracts/tool-process.js'
import { guardedDownload, UrlGuardError } from '../../contracts/url-guard-fetch.js'
import { systemClock, systemSleep, type Clock, type Sleep } from '../clock.js'
import type { FileDocument, ProcessingOutcome } from '../files/file-document.js'
import type { FileRepository } from '../files/file-repository.js'
import { ManagedStorage, uploadObjectKey } from '../files/managed-storage.js'
import { ManagedUrlRefused, ManagedUrls, presignGet } from '../files/managed-urls.js'
import type { Logger } from '../logger.js'
import { PollingLoop } from '../polling-loop.js'
import type { Claim } from '../work-list.js'
import { refusalMessage, STORAGE_QUOTA_EXCEEDED } from '../files/storage-quota.js'

export interface FileProcessorOptions {
  /** The files waiting to be processed, and the managed bucket they are stored in. */
  files: FileRepository
  logger: Logger
  /** Temporary downloads go under `<dataDir>/file-fetch`. */
  dataDir: string
  ffprobePath: string
  /** The jail ffprobe runs in (api/executors/sandbox-host.ts); null: none, said at start. */
  sandbox?: SandboxHost | null
  allowPrivateNetworks: boolean
  maxBytes?: number
  timeoutMs?: number
  /** How often to look for waiting files when nothing nudges it (an indexed lookup). */
  pollIntervalMs?: number
  /** How long a claim holds a file before another processor may take it; extended every third of it while the work runs. */
  leaseMs?: number
  now?: Clock
  sleep?: Sleep
}

/** Files taken in one round, processed side by side. */
const ROUND_SIZE = 32

/** A failure with the error_status the file record gets. */
class FileFailure extends Error {
  constructor(readonly errorStatus: string, message: string) {
    super(message)
  }
}

export class FileProcessor {
  readonly #files: FileRepository
  readonly #storage: ManagedStorage
  readonly #urls: ManagedUrls
  readonly #log: Logger
  readonly #now: Clock
  readonly #sleep: Sleep
  readonly #leaseMs: number
  readonly #polling: PollingLoop

  constructor(private readonly options: FileProcessorOptions) {
    this.#now = options.now ?? systemClock
    this.#sleep = options.sleep ?? systemSleep
    this.#leaseMs = options.leaseMs ?? 15 * 60_000
    this.#files = options.files
    this.#storage = options.files.storage
    this.#log = options.logger.child({ component: 'file-processor' })
    this.#urls = new ManagedUrls(this.#storage.s3, this.#storage.bucket, this.#now)
    this.#polling = new PollingLoop({ drain: () => this.drain() }, {
      pollIntervalMs: options.pollIntervalMs ?? 500,
      sleep: this.#sleep,
      log: this.#log,
      roundFailed: 'file processing round failed',
      prepare: () => this.#files.ensureIndexes(),
    })
  }

  /** Starts polling; idempotent. */
  start(): void {
    this.#polling.start()
  }

  /** Stops polling and waits for the files in hand; one it leaves unfinished is retaken after its lease. */
  stop(): Promise<void> {
    return this.#polling.stop()
  }

  /** Tells a running processor that a file was just recorded, so it looks now instead of at its next poll. */
  nudge(): void {
    this.#polling.nudge()
  }

  /** Takes every due file (up to 32) and processes them side by side; returns how many it finished. */
  async drain(): Promise<number> {
    const claims: Claim<FileDocument>[] = []
    while (claims.length < ROUND_SIZE && !this.#polling.stopping) {
      const claim = await this.#files.claimProcessing(this.#now(), this.#leaseMs)
      if (!claim) break
      claims.push(claim)
    }
    const results = await Promise.allSettled(claims.map((claim) => this.#process(claim)))
    for (const result of results) {
      // The record stays waiting under the claim: retaken once the lease ends.
      if (result.status === 'rejected') this.#log.error({ err: result.reason }, 'file processing failed')
    }
    return results.filter((r) => r.status === 'fulfilled' && r.value).length
  }

  /** Processes a claimed file and writes its outcome; false when the claim was lost meanwhile (another processor's outcome stands). */
  async #process(claim: Claim<FileDocument>): Promise<boolean> {
    const file = claim.doc
    const kind = file.service_store_type === 'UPLOAD' ? 'probe' : 'fetch'
    const log = this.#log.child({ file_id: file._id, account_id: file.account_id, kind })
    const lease = this.#holdLease(claim, log)
    let outcome: ProcessingOutcome
    try {
      const stored = kind === 'fetch' ? await this.#fetch(file) : await this.#probeUpload(file)
      const storage_url = await presignGet(this.#storage.s3, this.#storage.bucket, stored.objectKey)
      outcome = { ...stored.meta, object_key: stored.objectKey, status: 'STORED', storage_url }
    } catch (err) {
      const failure = err instanceof FileFailure ? err : new FileFailure('INTERNAL_ERROR', 'the file could not be processed')
      if (!(err instanceof FileFailure)) log.error({ err }, 'file processing failed unexpectedly')
      outcome = { status: 'FAILED', error_status: failure.errorStatus, error_message: failure.message }
    } finally {
      await lease.release()
    }
    if (!(await this.#files.finishProcessing(claim, outcome, this.#now()))) {
      if (outcome.status === 'STORED' && outcome.object_key && (await this.#files.discardIfDeleted(file._id, outcome.object_key))) {
        log.info({ object_key: outcome.object_key }, 'file deleted while it was processed: what was stored is removed')
      } else {
        log.warn('the lease on the file ran out while it was processed: its outcome is left to the processor that took it over')
      }
      return false
    }
    if (outcome.status === 'STORED') log.info('file stored')
    else {
      // A FAILED file holds no bytes: what its upload or fetch counted is freed (nothing, when nothing was counted).
      await this.#files.quota.release(file.account_id, file._id)
      log.info({ error_status: outcome.error_status }, 'file failed')
    }
    return true
  }

  /**
   * Extends the claim every third of a lease while the file is processed, so
   * a long download is not taken over by another processor. A failed
   * extension is logged and tried again at the next beat.
   */
  #holdLease(claim: Claim<FileDocument>, log: Logger): { release(): Promise<void> } {
    const done = new AbortController()
    const beats = (async () => {
      for (;;) {
        await this.#sleep(this.#leaseMs / 3, done.signal)
        if (done.signal.aborted) return
        try {
          if (!(await this.#files.extendProcessing(claim, this.#now(), this.#leaseMs))) return
        } catch (err) {
          log.warn({ err }, 'extending the lease on the file failed')
        }
      }
    })()
    return {
      release: async () => {
        done.abort()
        await beats
      },
    }
  }

  /** store-file: the guarded fetch to a temporary file, then the bucket, then ffprobe on the local copy. */
  async #fetch(file: FileDocument): Promise<{ objectKey: string; meta: MediaMeta }> {
    return this.#inTemporaryFolder(file, async (dir, path) => {
      const url = file.original_file_url ?? ''
      const maxBytes = this.options.maxBytes ?? 5 * 1024 ** 3
      try {
        // One of our storage_urls (checked with its account at acceptance) is read from the bucket, not through the URL guard.
        const sourceKey = await this.#urls.objectKey(url)
        if (sourceKey !== null) await this.#storage.download(sourceKey, path, maxBytes)
        else await guardedDownload(url, path, { allowPrivateNetworks: this.options.allowPrivateNetworks, maxBytes, timeoutMs: this.options.timeoutMs ?? 600_000 })
      } catch (err) {
        if (err instanceof UrlGuardError) throw new FileFailure(`INPUT_${err.code}`, `file_url: ${err.message}`)
        if (err instanceof ManagedUrlRefused) throw new FileFailure('INPUT_UNREACHABLE', `file_url: ${err.message}`)
        throw new FileFailure('INPUT_UNREACHABLE', `file_url: ${err instanceof Error ? err.message : String(err)}`)
      }
      // Counted before it is stored: a file over the quota leaves nothing in the bucket. A retaken file finds its count made.
      const reservation = await this.#files.quota.reserve(file.account_id, [{ id: file._id, bytes: (await stat(path)).size }])
      if (!reservation.reserved) throw new FileFailure(STORAGE_QUOTA_EXCEEDED, `file_url: ${refusalMessage('the file is', reservation)}; nothing was stored`)
      const objectKey = uploadObjectKey(file.account_id, file._id, file.filename)
      try {
        await this.#storage.upload(objectKey, createReadStream(path), mimeTypeForFilename(file.filename))
      } catch (err) {
        throw new FileFailure('UPLOAD_FAILED', `storing the file failed: ${err instanceof Error ? err.message : String(err)}`)
      }
      return { objectKey, meta: await this.#probe(dir, file.filename) }
    })
  }

  /** upload: the object copied out of the bucket, then ffprobe on the copy (the jailed ffprobe has no network). */
  async #probeUpload(file: FileDocument): Promise<{ objectKey: string; meta: MediaMeta }> {
    const objectKey = file.object_key
    if (!objectKey) throw new FileFailure('INTERNAL_ERROR', 'the upload has no object')
    return this.#inTemporaryFolder(file, async (dir, path) => {
      try {
        // Its size was bounded when it was uploaded.
        await this.#storage.download(objectKey, path, Infinity)
      } catch {
        throw new FileFailure('UPLOAD_MISSING', 'the uploaded object is not in storage')
      }
      const meta = await this.#probe(dir, file.filename)
      // The client's declared type stands when the extension says nothing.
      return { objectKey, meta: { ...meta, mime_type: meta.mime_type ?? file.mime_type } }
    })
  }

  /** Runs `work` with a fresh folder of its own for the file, removed afterwards. */
  async #inTemporaryFolder<T>(file: FileDocument, work: (dir: string, path: string) => Promise<T>): Promise<T> {
    const dir = join(this.options.dataDir, 'file-fetch', file._id)
    await mkdir(dir, { recursive: true, mode: 0o700 })
    try {
      return await work(dir, join(dir, file.filename))
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  }

  /** ffprobe on `dir/filename`, jailed in `dir` without network; unreadable media leaves the facts null. */
  async #probe(dir: string, filename: string): Promise<MediaMeta> {
    const size = (await stat(join(dir, filename))).size
    const run = await runTool(this.options.ffprobePath, probeArgs(filename), {
      cwd: dir,
      timeoutMs: PROBE_TIMEOUT_MS,
      sandbox: { host: this.options.sandbox ?? null, network: 'none' },
    })
    return metaOfProbe(run, filename, size)
  }
}
