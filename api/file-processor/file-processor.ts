/**
 * Finishes the files the API accepted as PROCESSING: a store-file URL is
 * fetched through the private-network guard, streamed to the managed bucket
 * and probed; an upload already in the bucket is probed where it lies. Each
 * ends STORED (media facts, storage_url) or FAILED (error_status,
 * error_message). A file is claimed with a lease inserted under a unique _id
 * (FerretDB 1.x's one atomic write), so two processors never work on one
 * file; the claim holder is the record's only writer until it is done.
 *
 * It finds work in a small queue collection (file-queue.ts), not in `files`:
 * a query on `files` scans every record ever written on FerretDB 1.x, one per
 * output included. A recovery scan of `files` (at start, then every
 * `recoveryIntervalMs`) queues any pending file without an entry, so a file
 * whose entry was never written, or whose processor died, is still finished.
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
import type { S3Client } from '@aws-sdk/client-s3'
import type { Collection, Db } from 'mongodb'
import { metaOfProbe, probeArgs, PROBE_TIMEOUT_MS } from '../../contracts/media-probe.js'
import { mimeTypeForFilename, type MediaMeta } from '../../contracts/output-file-meta.js'
import type { SandboxHost } from '../../contracts/sandbox.js'
import { runTool } from '../../contracts/tool-process.js'
import { guardedDownload, UrlGuardError } from '../../contracts/url-guard-fetch.js'
import { systemClock, type Clock, type Sleep } from '../clock.js'
import type { FileDocument } from '../files/file-document.js'
import { ManagedStorage, uploadObjectKey } from '../files/managed-storage.js'
import { ManagedUrlRefused, ManagedUrls } from '../files/managed-urls.js'
import type { Logger } from '../logger.js'
import { PollingLoop } from '../polling-loop.js'
import { presignGet } from '../files/storage-url.js'
import { FileQueue } from './file-queue.js'
import { isDuplicateKey } from '../duplicate-key.js'

interface FileLease {
  _id: string
  file_id: string
  expires_at: Date
}

export interface FileProcessorOptions {
  db: Db
  s3: S3Client
  bucket: string
  logger: Logger
  /** Temporary downloads go under `<dataDir>/file-fetch`. */
  dataDir: string
  ffprobePath: string
  /** The jail ffprobe runs in (api/executors/sandbox-host.ts); null: none, said at start. */
  sandbox?: SandboxHost | null
  allowPrivateNetworks: boolean
  maxBytes?: number
  timeoutMs?: number
  /** How often to look at the queue when nothing nudges it (a small collection). */
  pollIntervalMs?: number
  /**
   * How often to scan `files` for pending files without a queue entry (and
   * once at start); a full scan on FerretDB 1.x. Five minutes by default:
   * the API queues every file it accepts (and nudges an in-process
   * processor), so the scan only finds entries a crash kept from being written.
   */
  recoveryIntervalMs?: number
  leaseMs?: number
  now?: Clock
  sleep?: Sleep
}

/** A claim attempt: won, or held by another processor until `until`. */
type Claim = { won: true } | { won: false; until: Date }

/** A failure with the error_status the file record gets. */
class FileFailure extends Error {
  constructor(readonly errorStatus: string, message: string) {
    super(message)
  }
}

export class FileProcessor {
  readonly #files: Collection<FileDocument>
  readonly #leases: Collection<FileLease>
  readonly #queue: FileQueue
  readonly #storage: ManagedStorage
  readonly #urls: ManagedUrls
  readonly #log: Logger
  readonly #now: Clock
  readonly #polling: PollingLoop

  constructor(private readonly options: FileProcessorOptions) {
    this.#files = options.db.collection<FileDocument>('files')
    this.#leases = options.db.collection<FileLease>('file_leases')
    this.#queue = new FileQueue(options.db)
    this.#storage = new ManagedStorage(options.s3, options.bucket)
    this.#log = options.logger.child({ component: 'file-processor' })
    this.#now = options.now ?? systemClock
    this.#urls = new ManagedUrls(options.s3, options.bucket, this.#now)
    this.#polling = new PollingLoop(this, {
      pollIntervalMs: options.pollIntervalMs ?? 500,
      recoveryIntervalMs: options.recoveryIntervalMs ?? 300_000,
      ...(options.sleep ? { sleep: options.sleep } : {}),
      log: this.#log,
      roundFailed: 'file processing round failed',
      prepare: () => this.#queue.ensureIndexes(),
    })
  }

  /** Starts polling (after a recovery scan); idempotent. */
  start(): void {
    this.#polling.start()
  }

  /** Stops polling and waits for the files in hand; one it leaves unfinished is retaken after its lease. */
  stop(): Promise<void> {
    return this.#polling.stop()
  }

  /** Tells a running processor that a file was just queued, so it looks now instead of at its next poll. */
  nudge(): void {
    this.#polling.nudge()
  }

  /**
   * Queues every pending file that has no entry (its entry's write was lost
   * to a crash, or the API wrote none). A full scan of `files` on FerretDB
   * 1.x, an index scan on MongoDB. Returns how many entries it created.
   */
  async recover(): Promise<number> {
    const now = this.#now()
    let created = 0
    for await (const { _id } of this.#files.find({ 'processing.state': 'pending' }, { projection: { _id: 1 } })) {
      if (await this.#queue.enqueue(_id, now)) created += 1
    }
    if (created > 0) this.#log.debug({ created }, 'queued pending files found by the recovery scan')
    return created
  }

  /** Processes every due queued file once (up to 32 side by side); returns how many it finished. */
  async drain(): Promise<number> {
    const now = this.#now()
    const entries = await this.#queue.due(now, 32)
    const results = await Promise.allSettled(entries.map(({ _id }) => this.#take(_id)))
    for (const result of results) {
      // The record and its entry stay as they were: retried once the lease ends.
      if (result.status === 'rejected') this.#log.error({ err: result.reason }, 'file processing failed')
    }
    return results.filter((r) => r.status === 'fulfilled' && r.value).length
  }

  /**
   * One queued file: claimed, processed, dequeued, its leases dropped (the
   * record is done first, so a later claim finds nothing to do). When another
   * processor holds it, its entry waits until that lease ends. True when this
   * call finished the file.
   */
  async #take(fileId: string): Promise<boolean> {
    const claim = await this.#claim(fileId)
    if (!claim.won) {
      await this.#queue.reschedule(fileId, claim.until)
      return false
    }
    const finished = await this.#process(fileId)
    await this.#queue.remove(fileId)
    await this.#leases.deleteMany({ file_id: fileId })
    return finished
  }

  /** A lease on the file; an expired lease (its holder died) is taken over under a successor key. */
  async #claim(fileId: string): Promise<Claim> {
    const now = this.#now()
    const expires_at = new Date(now.getTime() + (this.options.leaseMs ?? 15 * 60_000))
    let key = fileId
    for (let depth = 0; depth < 8; depth++) {
      try {
        await this.#leases.insertOne({ _id: key, file_id: fileId, expires_at })
        return { won: true }
      } catch (err) {
        if (!isDuplicateKey(err)) throw err
      }
      const held = await this.#leases.findOne({ _id: key })
      if (held && held.expires_at > now) return { won: false, until: held.expires_at }
      key = `${key}~`
    }
    return { won: false, until: expires_at }
  }

  /** Finishes a pending file (STORED or FAILED); false when it was not pending (done already, or gone). */
  async #process(fileId: string): Promise<boolean> {
    const file = await this.#files.findOne({ _id: fileId })
    if (!file || file.processing?.state !== 'pending') return false
    const log = this.#log.child({ file_id: fileId, account_id: file.account_id, kind: file.processing.kind })
    let update: Partial<FileDocument>
    try {
      const stored = file.processing.kind === 'fetch' ? await this.#fetch(file) : await this.#probeUpload(file)
      const storage_url = await presignGet(this.options.s3, this.options.bucket, stored.objectKey)
      update = { ...stored.meta, object_key: stored.objectKey, status: 'STORED', storage_url, error_status: null, error_message: null }
      log.info('file stored')
    } catch (err) {
      const failure = err instanceof FileFailure ? err : new FileFailure('INTERNAL_ERROR', 'the file could not be processed')
      if (!(err instanceof FileFailure)) log.error({ err }, 'file processing failed unexpectedly')
      update = { status: 'FAILED', error_status: failure.errorStatus, error_message: failure.message }
      log.info({ error_status: failure.errorStatus }, 'file failed')
    }
    const now = this.#now()
    await this.#files.updateOne({ _id: fileId }, { $set: { ...update, updated_at: now, processing: { ...file.processing, state: 'done', claim: null } } })
    return true
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
