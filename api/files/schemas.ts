import { Type, type Static } from 'typebox'
import { PageOf, PageQuery } from '../pagination.js'
import { HttpUrl, Nullable } from '../validation/field-schemas.js'

export const FILE_STATUSES = ['PROCESSING', 'STORED', 'FAILED'] as const
export type FileStatus = (typeof FILE_STATUSES)[number]
export const STORE_TYPES = ['OUTPUT', 'STORED_FILE', 'UPLOAD'] as const
export type StoreType = (typeof STORE_TYPES)[number]

/**
 * One file of a stored file or output: a multi-file output (a playlist and its
 * segments, a numbered sequence) has one per file, main file included; every
 * other file has one, itself, so clients read one shape always.
 */
export const FileMember = Type.Object({
  filename: Type.String({ description: "path relative to the command's folder, '/'-separated: seg_001.ts, v0/prog.m3u8" }),
  storage_url: Nullable(
    Type.String({ description: 'a download URL of this file alone (presigned for managed storage, the public URL of an external destination with public_base_url); null for a private external bucket and after deletion' }),
  ),
  size_mbytes: Nullable(Type.Number()),
  mime_type: Nullable(Type.String()),
  external_object_key: Nullable(Type.String({ description: 'its object key in the customer bucket, for an external output; null otherwise' })),
})
export type FileMember = Static<typeof FileMember>

/** How many files and which: the fields a stored file and an OutputFileMeta add to the spec's. */
export const FileMembersFields = {
  file_count: Type.Integer({ minimum: 0, description: 'how many files: 1 for a single file, more for a multi-file output (size_mbytes is then their total)' }),
  files: Type.Array(FileMember, { description: 'every file, the main one among them; one entry for a single file' }),
}

/** The spec's StoredFileResponse, field for field, plus file_count and files. */
export const StoredFileResponse = Type.Object({
  file_id: Type.String(),
  storage_url: Nullable(Type.String()),
  status: Type.Enum([...FILE_STATUSES]),
  service_store_type: Type.Enum([...STORE_TYPES]),
  is_deleted: Type.Boolean(),
  original_file_url: Nullable(Type.String()),
  size_mbytes: Nullable(Type.Number()),
  duration: Nullable(Type.Number()),
  width: Nullable(Type.Number()),
  height: Nullable(Type.Number()),
  frame_rate: Nullable(Type.Number()),
  bitrate_video_kb: Nullable(Type.Number()),
  bitrate_audio_kb: Nullable(Type.Number()),
  sample_rate: Nullable(Type.Number()),
  channels: Nullable(Type.Number()),
  file_type: Nullable(Type.String()),
  file_format: Nullable(Type.String()),
  codec: Nullable(Type.String()),
  pixel_format: Nullable(Type.String()),
  mime_type: Nullable(Type.String()),
  error_status: Nullable(Type.String()),
  error_message: Nullable(Type.String()),
  created_at: Type.String({ format: 'date-time' }),
  expires_at: Nullable(
    Type.String({
      format: 'date-time',
      description: "when the file is deleted by retention (is_deleted becomes true, its data removed): its plan's retention or its command's retention_days after it was stored. null: kept until deleted (a plan without retention, an output in a storage destination)",
    }),
  ),
  ...FileMembersFields,
})
export type StoredFileResponse = Static<typeof StoredFileResponse>

export const FileIdResponse = Type.Object({ file_id: Type.String() })

/** The upload form as the document shows it: one required `file` part. */
export const UploadForm = Type.Object({ file: Type.String({ format: 'binary', description: 'the file to store' }) })

export const StoreFileBody = Type.Object({ file_url: HttpUrl('must be a publicly reachable http(s) URL without credentials') }, { additionalProperties: false })
export type StoreFileBody = Static<typeof StoreFileBody>

export const FileParams = Type.Object({ fileId: Type.String() })

export const ListFilesQuery = PageQuery

export const FileListResponse = PageOf('files', StoredFileResponse)

export const DeleteFileResponse = Type.Object({
  deleted: Type.Boolean(),
  file_id: Type.String(),
  external: Type.Optional(Type.Boolean()),
})
