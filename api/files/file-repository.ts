import type { FastifyBaseLogger } from 'fastify'
import type { Collection, Db } from 'mongodb'
import type { Clock } from '../clock.js'
import type { CommandDocument } from '../commands/command-document.js'
import type { CommandRepository } from '../commands/command-repository.js'
import { ValidationError } from '../errors/api-errors.js'
import type { OutputFileResult } from '../../contracts/status-events.js'
import { isDuplicateKey } from '../store-compatibility.js'
import { WorkList, type Claim } from '../work-list.js'
import { StoreIndexes } from '../store-indexes.js'
import { fileMembers, managedObjectKeys, PROCESSING_WORK, type FileDocument, type ProcessingOutcome } from './file-document.js'
import type { ManagedStorage } from './managed-storage.js'
import { ManagedUrlRefused, ManagedUrls, PresignedGets, STORAGE_URL_TTL_SECONDS } from './managed-urls.js'
import { outputFileDocument, outputFileId, outputHolds, outputMembers, outputStorageUrl } from './output-files.js'
import { readPlaylists, writePlayback } from './playback.js'
import type { StoredFileRow } from '../usage/usage-report.js'
import type { Plan } from '../accounts/plans.js'
import { refusalMessage, type StorageQuota } from './storage-quota.js'

/** Files in MongoDB and their bytes in the managed bucket, always within one account. */
export class FileRepository {
  readonly #files: Collection<FileDocument>
  readonly #processing: WorkList<FileDocument>
  readonly #indexes: StoreIndexes
  readonly #urls: ManagedUrls

  constructor(
    db: Db,
    readonly storage: ManagedStorage,
    private readonly commands: CommandRepository,
    private readonly now: Clock,
    /** What each account holds in managed storage; every file counted in it is released when deleted here. */
    readonly quota: StorageQuota,
  ) {
    this.#files = db.collection<FileDocument>('files')
    this.#processing = new WorkList(this.#files, PROCESSING_WORK)
    this.#indexes = new StoreIndexes(db)
    this.#urls = new ManagedUrls(storage.s3, storage.bucket, now)
  }

  /** The list, a command's outputs, the retention sweep, and the file processor's work list. */
  async ensureIndexes(): Promise<void> {
    await this.#indexes.ensure(this.#files, { account_id: 1, is_deleted: 1 }, { created_at: -1, _id: -1 })
    await this.#indexes.ensure(this.#files, { command_id: 1 })
    await this.#indexes.ensure(this.#files, { expires_on: 1, is_deleted: 1 })
    await this.#processing.ensureIndexes(this.#indexes)
  }

  /** Records a file waiting for the file processor (an upload or a store-file URL, from newPendingFile). */
  async insertPending(doc: FileDocument): Promise<void> {
    await this.#files.insertOne(doc)
  }

  /**
   * Counts a finished command's managed outputs against its account's quota,
   * all or none; null when they fit (or were counted already: a replayed
   * SUCCESS), else why not, for the command's error_message.
   */
  async reserveOutputs(command: CommandDocument, results: Record<string, OutputFileResult>): Promise<string | null> {
    const reservation = await this.quota.reserve(command.account_id, outputHolds(command._id, results))
    return reservation.reserved ? null : refusalMessage('the outputs hold', reservation)
  }

  /** The bytes the account may still store; 403 STORAGE_QUOTA_EXCEEDED when it is at or over its quota: for what writes managed storage before its size is known. */
  requireStorageRoom(account: { id: string; plan: Plan }, what: string): Promise<number> {
    return this.quota.requireRoom(account.id, what, account.plan)
  }

  /**
   * Records a finished command's outputs, managed ones with a presigned
   * storage_url; a managed multi-file output's playlists get their playable
   * copies first (playback.ts). Their ids derive from the command and alias,
   * so a replayed SUCCESS writes nothing new; it gets back the records as
   * first written.
   */
  async insertOutputs(command: CommandDocument, results: Record<string, OutputFileResult>, now: Date): Promise<Record<string, FileDocument>> {
    const outputs: Record<string, FileDocument> = {}
    for (const [alias, result] of Object.entries(results)) {
      // A single-file record is built without side effects, so it is inserted at once and a replay learns of the
      // first from the duplicate key; a multi-file one writes playback copies first, so it looks before it builds.
      const recorded = result.files ? await this.#files.findOne({ _id: outputFileId(command._id, alias) }) : null
      if (recorded) {
        outputs[alias] = recorded
        continue
      }
      const file = await this.#outputDocument(command, alias, result, now)
      try {
        await this.#files.insertOne(file)
        outputs[alias] = file
      } catch (err) {
        if (!isDuplicateKey(err)) throw err
        outputs[alias] = (await this.#files.findOne({ _id: file._id })) ?? file
      }
    }
    return outputs
  }

  /** A new output's record; a managed multi-file output's playback copies are written before it, so a record never names a copy that is not there. */
  async #outputDocument(command: CommandDocument, alias: string, result: OutputFileResult, now: Date): Promise<FileDocument> {
    const { s3, bucket } = this.storage
    if (!result.files) return outputFileDocument(command, alias, result, await outputStorageUrl(s3, command, result), now)
    // A managed output's playlists are read while its members are signed: the reads need only the keys.
    const texts = result.storage_location === 'INTERNAL' ? readPlaylists(s3, bucket, result.files) : null
    // Awaited below, or dropped when signing fails first: never an unhandled rejection.
    texts?.catch(() => undefined)
    const signer = await PresignedGets.of(s3, bucket, STORAGE_URL_TTL_SECONDS)
    const members = await outputMembers(signer, command, result)
    const main = members?.find((member) => member.object_key === result.object_key)
    const storageUrl = main ? main.storage_url : await outputStorageUrl(s3, command, result)
    if (!members || !texts) return outputFileDocument(command, alias, result, storageUrl, now, { members })
    const playback = await writePlayback(s3, bucket, signer, { commandId: command._id, alias, mainFilename: main?.filename ?? result.filename, members, texts: await texts })
    return outputFileDocument(command, alias, result, playback.mainUrl ?? storageUrl, now, { members, playbackKeys: playback.keys })
  }

  /** The file, deleted or not, if it is the account's. */
  async find(accountId: string, fileId: string): Promise<FileDocument | null> {
    // By _id, ownership checked here: another account's file looks missing.
    const doc = await this.#files.findOne({ _id: fileId })
    return doc && doc.account_id === accountId ? doc : null
  }

  /**
   * A command or store-file input that is one of this service's storage_urls:
   * the object key to read from the managed bucket; null for any other URL
   * (the URL guard's business). Throws a 422 naming `field` when the URL is
   * of the managed bucket but unusable: not signed by us, expired, or not a
   * live file of this account. Another account's URL is refused although
   * S3 would honour it as a bearer link: a command reads only its own
   * account's files, as GET /files/:id shows only them.
   */
  async managedInput(accountId: string, url: string, field: string): Promise<string | null> {
    let key: string | null
    try {
      key = await this.#urls.objectKey(url)
    } catch (err) {
      if (err instanceof ManagedUrlRefused) throw new ValidationError(`${field}: ${err.message}`)
      throw err
    }
    if (key === null) return null
    const file = await this.#byObjectKey(key)
    // Missing and another account's look the same, like GET /files/:id's 404.
    if (!file || file.account_id !== accountId) throw new ValidationError(`${field}: it is a storage_url of this service for no file of this account`)
    if (file.is_deleted) throw new ValidationError(`${field}: it is the storage_url of file ${file._id}, which was deleted`)
    return key
  }

  /** The managed file stored under `key`, found by _id or command_id (the indexed lookups) from the key's layout. */
  async #byObjectKey(key: string): Promise<FileDocument | null> {
    const segments = key.split('/')
    // uploads/{account_id}/{file_id}/{filename}: uploads and store-file files.
    if (segments[0] === 'uploads' && segments.length === 4) {
      const file = await this.#files.findOne({ _id: segments[2] as string })
      if (file?.object_key === key) return file
    }
    // {prefix}/{command_id}/{filename}: a command's output, or one file of a multi-file output.
    const commandId = segments.at(-2)
    if (commandId === undefined) return null
    const outputs = await this.#files.find({ command_id: commandId, storage_location: 'INTERNAL' }).toArray()
    return outputs.find((file) => file.object_key === key || file.members?.some((member) => member.object_key === key)) ?? null
  }

  /** The account's files that are not deleted, newest first. */
  async list(accountId: string, page: { limit: number; offset: number }): Promise<FileDocument[]> {
    return this.#files
      .find({ account_id: accountId, is_deleted: false })
      .sort({ created_at: -1, _id: -1 })
      .skip(page.offset)
      .limit(page.limit)
      .toArray()
  }

  /**
   * The account's managed files that were in storage at some time since
   * `since`: still there, or deleted since (usage: api/usage/, the console's
   * usage page). Summed by the caller, not in a $group (api/store-compatibility.ts).
   */
  async storedRowsSince(accountId: string, since: Date): Promise<StoredFileRow[]> {
    return this.#files
      .find(
        { account_id: accountId, storage_location: 'INTERNAL', status: 'STORED', $or: [{ is_deleted: false }, { deleted_at: { $gte: since } }] },
        { projection: { _id: 0, created_at: 1, deleted_at: 1, size_mbytes: 1 } },
      )
      .toArray()
  }

  /**
   * Managed files not yet deleted that expire on one of `days` (UTC days,
   * `YYYY-MM-DD`) and whose expiry has passed at `now`, earliest first, at
   * most `limit`: the retention sweep's batch (retention-sweep.ts). The days
   * are what the index finds them by on both stores, so a round reads the
   * files of its due days, not every live file (api/store-compatibility.ts).
   */
  async expiredFiles(days: readonly string[], now: Date, limit: number): Promise<FileDocument[]> {
    return this.#files
      .find({ expires_on: { $in: [...days] }, is_deleted: false, storage_location: 'INTERNAL', expires_at: { $lte: now } })
      .sort({ expires_at: 1, _id: 1 })
      .limit(limit)
      .toArray()
  }

  /**
   * Deletes a managed file's bytes, then marks its record deleted and clears
   * storage_url (in its command's result too, for an output). Bytes first: a
   * crash in between leaves a record a retried DELETE finishes. True when this
   * call marked it; false when it was deleted already.
   */
  async deleteManaged(file: FileDocument, log: FastifyBaseLogger): Promise<boolean> {
    if (file.storage_location !== 'INTERNAL') throw new Error(`file ${file._id} is external: it is never deleted`)
    // Every object: a multi-file output's members and playback copies too.
    await this.storage.deleteAll(managedObjectKeys(file))
    const now = this.now()
    // A file still being processed stops waiting: its processor's finish then finds no claim and discards what it stored (discardIfDeleted).
    const endsProcessing = file.processing_state === 'waiting' ? { [PROCESSING_WORK.state]: 'done', [PROCESSING_WORK.claim]: null } : {}
    const deleted = await this.#files.findOneAndUpdate(
      { _id: file._id, is_deleted: false },
      { $set: { is_deleted: true, deleted_at: now, storage_url: null, updated_at: now, ...endsProcessing } },
      { returnDocument: 'after' },
    )
    // A processor that stored the bytes between the read and this write: they go too.
    if (deleted?.object_key && deleted.object_key !== file.object_key) await this.storage.delete(deleted.object_key)
    // After the mark, whoever marked it: a DELETE retried after a crash here frees what the first left counted.
    await this.quota.release(file.account_id, file._id)
    if (file.command_id && file.output_alias) {
      const members = deleted ?? { ...file, is_deleted: true, storage_url: null }
      await this.commands.markOutputDeleted(file.command_id, file.output_alias, fileMembers(members).files, now)
    }
    log.info({ file_id: file._id, account_id: file.account_id, command_id: file.command_id }, 'managed file deleted')
    return deleted !== null
  }

  /**
   * After a processor lost its claim: when the file was deleted meanwhile,
   * removes the object the processor stored for it (nobody else will); true
   * when it did. A claim lost to another processor's takeover leaves the
   * object to that processor's outcome.
   */
  async discardIfDeleted(fileId: string, objectKey: string): Promise<boolean> {
    const file = await this.#files.findOne({ _id: fileId })
    if (!file?.is_deleted) return false
    await this.storage.delete(objectKey)
    // The processor counted the bytes after the delete released what was counted then.
    await this.quota.release(file.account_id, file._id)
    return true
  }

  // The file processor's work list: the processing_* fields of uploads and store-file files.

  /** Takes the earliest due file waiting to be processed, for `leaseMs`; null when none is due. */
  claimProcessing(now: Date, leaseMs: number): Promise<Claim<FileDocument> | null> {
    return this.#processing.claimNext(now, leaseMs)
  }

  /** Keeps holding a file for another `leaseMs` (a long download); false when the claim was lost. */
  extendProcessing(claim: Claim<FileDocument>, now: Date, leaseMs: number): Promise<boolean> {
    return this.#processing.extend(claim, now, leaseMs)
  }

  /** Ends a file's processing STORED or FAILED, if the claim still holds it; false (nothing written) when it does not. */
  finishProcessing(claim: Claim<FileDocument>, outcome: ProcessingOutcome, now: Date): Promise<boolean> {
    const cleared = outcome.status === 'STORED' ? { error_status: null, error_message: null } : {}
    return this.#processing.finish(claim, { ...outcome, ...cleared, updated_at: now })
  }

  /** Deletes every managed, not yet deleted output of a command; external outputs are left alone. Returns how many. */
  async deleteCommandOutputs(command: CommandDocument, log: FastifyBaseLogger): Promise<number> {
    const outputs = await this.#files
      .find({ command_id: command._id, account_id: command.account_id, storage_location: 'INTERNAL', is_deleted: false })
      .toArray()
    let deleted = 0
    for (const file of outputs) if (await this.deleteManaged(file, log)) deleted += 1
    return deleted
  }
}
