import type { MediaMeta } from '../../contracts/output-file-meta.js'
import { waitingFields, type WorkFields, type WorkState } from '../work-list.js'
import { expiryFields } from './retention.js'
import type { FileMember, FileStatus, StoreType, StoredFileResponse } from './schemas.js'

/** Media facts the runner's probe fills in (contracts' MediaMeta); all null until then. */
export type MediaFacts = MediaMeta

export const NO_MEDIA_FACTS: MediaFacts = {
  size_mbytes: null,
  duration: null,
  width: null,
  height: null,
  frame_rate: null,
  bitrate_video_kb: null,
  bitrate_audio_kb: null,
  sample_rate: null,
  channels: null,
  file_type: null,
  file_format: null,
  codec: null,
  pixel_format: null,
  mime_type: null,
}

/**
 * The file processor's work on an upload or a store-file file, in four
 * top-level fields of the record (api/work-list.ts): waiting from the insert
 * until the processor finishes it STORED or FAILED, then done. The kind of
 * work follows from service_store_type: a STORED_FILE is fetched from its
 * URL, an UPLOAD is probed where it lies. Outputs carry none of the fields.
 */
export const PROCESSING_WORK: WorkFields = { state: 'processing_state', dueAt: 'processing_due_at', claim: 'processing_claim', attempts: 'processing_attempts' }

/** The fields PROCESSING_WORK names; never part of a response (toStoredFileResponse picks the spec's fields). */
export interface FileProcessingWork {
  processing_state?: WorkState
  processing_due_at?: Date
  processing_claim?: string | null
  processing_attempts?: number
}

/** What processing sets on the record: the facts and storage_url of a STORED file, or why it FAILED. */
export type ProcessingOutcome =
  | (MediaFacts & { status: 'STORED'; object_key: string; storage_url: string })
  | { status: 'FAILED'; error_status: string; error_message: string }

/** One file of a multi-file output as recorded: enough to list, sign and delete it. */
export interface MemberRecord {
  /** Its path relative to the command's folder, '/'-separated. */
  filename: string
  /** Its key in the bucket the output lives in: the managed one, or the customer's for an EXTERNAL output. */
  object_key: string
  size_bytes: number
  mime_type: string | null
  /** Its own download URL (presigned, or the destination's public one); null for a private external bucket or once deleted. */
  storage_url: string | null
}

/** A file in the `files` collection: an upload, a stored URL, or a command's output. */
export interface FileDocument extends MediaFacts, FileProcessingWork {
  _id: string
  account_id: string
  /** Set for outputs: the command and the `out_*` alias that produced the file. */
  command_id: string | null
  output_alias: string | null
  filename: string
  status: FileStatus
  service_store_type: StoreType
  storage_location: 'INTERNAL' | 'EXTERNAL'
  /** Where the bytes are: the managed bucket for INTERNAL files; null until they exist. */
  object_key: string | null
  storage_url: string | null
  external_uri: string | null
  external_object_key: string | null
  is_deleted: boolean
  deleted_at: Date | null
  /**
   * When the retention sweep deletes the file (api/files/retention-sweep.ts),
   * set when it is stored from its plan or its command's retention_days;
   * null for a file kept until deleted, and always for an EXTERNAL output.
   */
  expires_at: Date | null
  /** The UTC day of expires_at (retention.ts's expiryFields): what the retention sweep finds the file by. */
  expires_on: string | null
  original_file_url: string | null
  error_status: string | null
  error_message: string | null
  created_at: Date
  updated_at: Date
  /** Every file of a multi-file output, the main one (filename, object_key above) among them; absent for a single file. */
  members?: MemberRecord[]
  /** Objects of the managed bucket the service wrote for the output's playback (playlists with presigned entries, playback.ts); deleted with it. */
  playback_keys?: string[]
}

/** The spec's StoredFileResponse, plus file_count and files. */
export function toStoredFileResponse(doc: FileDocument): StoredFileResponse {
  return {
    file_id: doc._id,
    storage_url: doc.storage_url,
    status: doc.status,
    service_store_type: doc.service_store_type,
    is_deleted: doc.is_deleted,
    original_file_url: doc.original_file_url,
    size_mbytes: doc.size_mbytes,
    duration: doc.duration,
    width: doc.width,
    height: doc.height,
    frame_rate: doc.frame_rate,
    bitrate_video_kb: doc.bitrate_video_kb,
    bitrate_audio_kb: doc.bitrate_audio_kb,
    sample_rate: doc.sample_rate,
    channels: doc.channels,
    file_type: doc.file_type,
    file_format: doc.file_format,
    codec: doc.codec,
    pixel_format: doc.pixel_format,
    mime_type: doc.mime_type,
    error_status: doc.error_status,
    error_message: doc.error_message,
    created_at: doc.created_at.toISOString(),
    expires_at: doc.expires_at?.toISOString() ?? null,
    ...fileMembers(doc),
  }
}

/** A new PROCESSING record for an upload or a store-file URL, waiting for the file processor from `now`, expiring `expiresAt` (null: kept until deleted). */
export function newPendingFile(
  fields: { fileId: string; accountId: string; filename: string; storeType: 'UPLOAD' | 'STORED_FILE'; objectKey: string | null; originalFileUrl: string | null; mimeType: string | null; expiresAt: Date | null },
  now: Date,
): FileDocument {
  return {
    _id: fields.fileId,
    account_id: fields.accountId,
    command_id: null,
    output_alias: null,
    filename: fields.filename,
    status: 'PROCESSING',
    service_store_type: fields.storeType,
    storage_location: 'INTERNAL',
    object_key: fields.objectKey,
    storage_url: null,
    external_uri: null,
    external_object_key: null,
    is_deleted: false,
    deleted_at: null,
    ...expiryFields(fields.expiresAt),
    original_file_url: fields.originalFileUrl,
    ...NO_MEDIA_FACTS,
    mime_type: fields.mimeType,
    error_status: null,
    error_message: null,
    created_at: now,
    updated_at: now,
    ...(waitingFields(PROCESSING_WORK, now) as FileProcessingWork),
  }
}

/** Megabytes are binary (MiB), as size_mbytes is everywhere (contracts/output-file-meta.ts). */
const BYTES_PER_MB = 1024 * 1024

/** Bytes as size_mbytes, to the byte's sixth decimal like the probe's. */
export function megabytes(bytes: number): number {
  return Math.round((bytes / BYTES_PER_MB) * 1e6) / 1e6
}

/**
 * `files` and `file_count` of a record, as responses show them: a multi-file
 * output lists each of its members; any other file lists itself, so a client
 * reads one shape always.
 */
export function fileMembers(doc: FileDocument): { file_count: number; files: FileMember[] } {
  const external = doc.storage_location === 'EXTERNAL'
  const files: FileMember[] = doc.members
    ? doc.members.map((member) => ({
        filename: member.filename,
        // A deleted output's members have no bytes left to download.
        storage_url: doc.is_deleted ? null : member.storage_url,
        size_mbytes: megabytes(member.size_bytes),
        mime_type: member.mime_type,
        external_object_key: external ? member.object_key : null,
      }))
    : [{ filename: doc.filename, storage_url: doc.storage_url, size_mbytes: doc.size_mbytes, mime_type: doc.mime_type, external_object_key: doc.external_object_key }]
  return { file_count: files.length, files }
}

/** Every object of a managed file in the managed bucket: its own, its members', and its playback copies; none twice. */
export function managedObjectKeys(doc: FileDocument): string[] {
  if (doc.storage_location !== 'INTERNAL') return []
  const keys = [doc.object_key, ...(doc.members ?? []).map((member) => member.object_key), ...(doc.playback_keys ?? [])]
  return [...new Set(keys.filter((key): key is string => key !== null))]
}
