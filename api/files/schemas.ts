import { Type, type Static } from 'typebox'
import { PageQuery } from '../pagination.js'
import { HttpUrl } from '../validation/field-schemas.js'

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) => Type.Union([schema, Type.Null()])

export const FILE_STATUSES = ['PROCESSING', 'STORED', 'FAILED'] as const
export type FileStatus = (typeof FILE_STATUSES)[number]
export const STORE_TYPES = ['OUTPUT', 'STORED_FILE', 'UPLOAD'] as const
export type StoreType = (typeof STORE_TYPES)[number]

/** The spec's StoredFileResponse, field for field. */
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
})
export type StoredFileResponse = Static<typeof StoredFileResponse>

export const FileIdResponse = Type.Object({ file_id: Type.String() })

/** The upload form as the document shows it: one required `file` part. */
export const UploadForm = Type.Object({ file: Type.String({ format: 'binary', description: 'the file to store' }) })

export const StoreFileBody = Type.Object({ file_url: HttpUrl('must be a publicly reachable http(s) URL without credentials') }, { additionalProperties: false })
export type StoreFileBody = Static<typeof StoreFileBody>

export const FileParams = Type.Object({ fileId: Type.String() })

export const ListFilesQuery = PageQuery

export const FileListResponse = Type.Object({
  files: Type.Array(StoredFileResponse),
  limit: Type.Integer(),
  offset: Type.Integer(),
})

export const DeleteFileResponse = Type.Object({
  deleted: Type.Boolean(),
  file_id: Type.String(),
  external: Type.Optional(Type.Boolean()),
})
