import { errorResponses } from '../errors/error-response.js'
import { pageOf } from '../pagination.js'
import multipart from '@fastify/multipart'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import { filenameProblem } from '../../contracts/placeholders.js'
import { NotFoundError, ValidationError } from '../errors/api-errors.js'
import { newId } from '../ids.js'
import { systemClock, type Clock } from '../clock.js'
import { urlProblem } from '../commands/validation.js'
import { newPendingFile, toStoredFileResponse } from './file-document.js'
import { uploadObjectKey } from './managed-storage.js'
import { describeBytes, refusalMessage, StorageQuotaExceeded } from './storage-quota.js'
import { DEFAULT_RETENTION_DAYS, expiryOf, planRetentionDays, type RetentionDaysByPlan } from './retention.js'
import { DeleteFileResponse, FileIdResponse, FileListResponse, FileParams, ListFilesQuery, StoreFileBody, StoredFileResponse, UploadForm } from './schemas.js'

/** Not shown in the spec; 5 GiB, the largest object a single S3 PUT could hold, as a generous bound. */
export const MAX_UPLOAD_BYTES = 5 * 1024 ** 3

/** A client's filename made safe for an object key and a later command input; `fallback` when nothing usable remains. */
export function safeFilename(raw: string | undefined, fallback: string): string {
  const base = (raw ?? '').split(/[/\\]/).pop() ?? ''
  const cleaned = base.replace(/[^A-Za-z0-9._-]+/g, '_').replace(/^[.-]+/, '').replace(/\.{2,}/g, '.').slice(-200)
  return cleaned && filenameProblem(cleaned) === null ? cleaned : fallback
}

/** A URL path with its percent-escapes decoded; one that is not valid UTF-8 escaping (`%ff`, a bare `%`) is kept as sent. */
function decodedPath(pathname: string): string {
  try {
    return decodeURIComponent(pathname)
  } catch {
    return pathname
  }
}

/** A multipart body the parser cannot read (no boundary, cut short, malformed parts): the spec's 422 for an upload. */
function malformedMultipart(error: unknown): ValidationError {
  const reason = error instanceof Error ? error.message : String(error)
  return new ValidationError(`file: the multipart/form-data body cannot be read: ${reason}`)
}

/** What app.ts gives the file routes. */
interface FileRoutesOptions {
  now?: Clock | undefined
  /** Days each plan keeps an upload or a store-file file (config.retentionDays). */
  retentionDays?: RetentionDaysByPlan | undefined
  /** Called after a file waiting for processing is recorded: the in-process file processor's nudge (one in another process finds it at its next poll). */
  onQueued?: (() => void) | undefined
}

/** The file endpoints: upload, store-file, get, list, delete. */
export const fileRoutes: FastifyPluginAsyncTypebox<FileRoutesOptions> = async (app, options) => {
  const now = options.now ?? systemClock
  const onQueued = options.onQueued ?? (() => {})
  const retentionDays = options.retentionDays ?? DEFAULT_RETENTION_DAYS
  // Counted from acceptance: an upload's bytes are stored by then, a store-file's fetch follows within moments.
  const expiresAt = (request: FastifyRequest, at: Date) => expiryOf(at, planRetentionDays(request.account.plan, retentionDays))

  // Upload in its own scope: multipart parsing and a catch-all parser stay there.
  await app.register(uploadRoute, { now, expiresAt, onQueued })

  app.post('/files/store-file', { schema: { tags: ['files'], body: StoreFileBody, response: { 200: FileIdResponse, ...errorResponses(400, 403, 422) } } }, async (request) => {
    const { file_url } = request.body
    const problem = urlProblem(file_url)
    if (problem) throw new ValidationError(`file_url: ${problem}`)
    // One of this account's storage_urls is copied from the bucket; one of the bucket that does not verify is refused here.
    await app.files.managedInput(request.account.id, file_url, 'file_url')
    // Its size is known once fetched (the file processor counts it then); an account at its quota is refused now.
    await app.files.requireStorageRoom(request.account, 'file_url')
    const fileId = newId('file')
    const filename = safeFilename(decodedPath(new URL(file_url).pathname), 'file')
    // Recorded waiting: the file processor fetches it.
    const at = now()
    await app.files.insertPending(
      newPendingFile({ fileId, accountId: request.account.id, filename, storeType: 'STORED_FILE', objectKey: null, originalFileUrl: file_url, mimeType: null, expiresAt: expiresAt(request, at) }, at),
    )
    onQueued()
    request.log.info({ file_id: fileId, account_id: request.account.id }, 'store-file accepted')
    return { file_id: fileId }
  })

  app.get('/files/:fileId', { schema: { tags: ['files'], params: FileParams, response: { 200: StoredFileResponse, ...errorResponses(404) } } }, async (request) => {
    const file = await app.files.find(request.account.id, request.params.fileId)
    if (!file) throw new NotFoundError(`fileId: no file ${request.params.fileId}`)
    return toStoredFileResponse(file)
  })

  app.get('/files', { schema: { tags: ['files'], querystring: ListFilesQuery, response: { 200: FileListResponse, ...errorResponses(400) } } }, async (request) => {
    const { limit, offset } = pageOf(request.query)
    const files = await app.files.list(request.account.id, { limit, offset })
    return { files: files.map(toStoredFileResponse), limit, offset }
  })

  app.delete('/files/:fileId', { schema: { tags: ['files'], params: FileParams, response: { 200: DeleteFileResponse, ...errorResponses(404) } } }, async (request) => {
    const { fileId } = request.params
    const file = await app.files.find(request.account.id, fileId)
    if (!file || file.is_deleted) throw new NotFoundError(`fileId: no file ${fileId}${file ? ' (already deleted)' : ''}`)
    // Customer-owned bytes are never deleted by the service, as the spec says.
    if (file.storage_location === 'EXTERNAL') return { deleted: false, file_id: fileId, external: true }
    if (!(await app.files.deleteManaged(file, request.log))) throw new NotFoundError(`fileId: no file ${fileId} (already deleted)`)
    return { deleted: true, file_id: fileId }
  })
}

/**
 * POST /files/upload, in a scope of its own: multipart parsing and a
 * catch-all parser (so any other content type reaches the handler and gets
 * the spec's 422, not Fastify's 415) apply to it alone.
 */
const uploadRoute: FastifyPluginAsyncTypebox<{ now: Clock; expiresAt: (request: FastifyRequest, at: Date) => Date | null; onQueued: () => void }> = async (scope, { now, expiresAt, onQueued }) => {
  await scope.register(multipart, { limits: { files: 1, fileSize: MAX_UPLOAD_BYTES, fields: 20, parts: 25 } })
  scope.addContentTypeParser('*', (_request, _payload, done) => done(null, undefined))

  scope.post(
    '/files/upload',
    { schema: { tags: ['files'], consumes: ['multipart/form-data'], response: { 200: FileIdResponse, ...errorResponses(403, 422) } }, config: { documentedBody: UploadForm } },
    async (request) => {
      if (!request.isMultipart()) throw new ValidationError('Content-Type: must be multipart/form-data with a "file" field')
      const accountId = request.account.id
      // Before a byte is read: an account at its quota is refused at once, and the parser stops past the room left.
      const room = await scope.files.requireStorageRoom(request.account, 'file')
      const part = await request.file({ limits: { fileSize: Math.min(MAX_UPLOAD_BYTES, room) } }).catch((error: unknown) => {
        throw malformedMultipart(error)
      })
      if (!part) throw new ValidationError('file: the multipart form has no "file" field')
      if (part.fieldname !== 'file') {
        part.file.resume()
        throw new ValidationError(`file: the file must be sent in the "file" field, not "${part.fieldname}"`)
      }
      const fileId = newId('file')
      const filename = safeFilename(part.filename, 'upload')
      const key = uploadObjectKey(accountId, fileId, filename)
      let bytes: number
      try {
        bytes = await scope.files.storage.upload(key, part.file, part.mimetype || null)
      } catch (error) {
        // The parser ends the part's stream with an error when the body breaks off or is malformed: the client's fault.
        if (!part.file.errored) throw error
        await scope.files.storage.delete(key).catch(() => undefined)
        throw malformedMultipart(part.file.errored)
      }
      if (part.file.truncated) {
        await scope.files.storage.delete(key)
        if (room < MAX_UPLOAD_BYTES) throw new StorageQuotaExceeded(`file: larger than the ${describeBytes(room)} left of the plan's storage quota; nothing was stored`)
        throw new ValidationError(`file: larger than the ${MAX_UPLOAD_BYTES / 1024 ** 3} GiB upload limit`)
      }
      // The room read above may have gone to another upload since: the conditional reservation decides, and a refused upload leaves nothing.
      const reservation = await scope.files.quota.reserve(accountId, [{ id: fileId, bytes }], request.account.plan)
      if (!reservation.reserved) {
        await scope.files.storage.delete(key)
        throw new StorageQuotaExceeded(`file: ${refusalMessage('it is', reservation)}; nothing was stored`)
      }
      // Bytes first, then the count, then the record: a crash in between leaves an unreferenced object (counted), never a record without bytes.
      const at = now()
      const pending = newPendingFile({ fileId, accountId, filename, storeType: 'UPLOAD', objectKey: key, originalFileUrl: null, mimeType: part.mimetype || null, expiresAt: expiresAt(request, at) }, at)
      await scope.files.insertPending(pending).catch(async (error: unknown) => {
        await scope.files.quota.release(pending.account_id, pending._id)
        await scope.files.storage.delete(key)
        throw error
      })
      onQueued()
      request.log.info({ file_id: fileId, account_id: accountId, bytes }, 'file uploaded')
      return { file_id: fileId }
    },
  )
}
