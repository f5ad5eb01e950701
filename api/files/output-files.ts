/**
 * A finished command's outputs as `files` records (service_store_type
 * OUTPUT), so GET /files/:id and the deletes work on them, and what they add
 * to the account's storage quota.
 */
import { createHash } from 'node:crypto'
import type { S3Client } from '@aws-sdk/client-s3'
import { mimeTypeForFilename } from '../../contracts/output-file-meta.js'
import type { OutputFileResult, OutputMember } from '../../contracts/status-events.js'
import type { CommandDocument } from '../commands/command-document.js'
import type { OutputFileMeta } from '../commands/schemas.js'
import { publicUrlFor } from '../storage-destinations/destination-spec.js'
import { fileMembers, NO_MEDIA_FACTS, type FileDocument, type MemberRecord } from './file-document.js'
import { mapLimited } from './map-limited.js'
import { presignGet, type PresignedGets } from './managed-urls.js'
import { expiryFields, expiryOf } from './retention.js'
import type { StorageHold } from './storage-quota.js'

/**
 * An output's storage_url: presigned for a managed output; for one in the
 * account's own bucket, its public URL when the destination has a
 * public_base_url, else null.
 */
export function outputStorageUrl(s3: S3Client, command: CommandDocument, result: OutputFileResult): Promise<string | null> {
  if (result.storage_location === 'INTERNAL') return presignGet(s3, result.bucket, result.object_key)
  return Promise.resolve(publicUrlFor(command.storage_destination?.publicBaseUrl, result.object_key))
}

/** Presigns run side by side up to this many: each is a local computation, awaited only because the SDK's signer is async. */
const SIGNING_CONCURRENCY = 16

/** MIME types of the playlist and segment files FFmpeg's multi-file muxers write, which the probe's table does not name. */
const SEGMENT_MIME: Record<string, string> = { m3u8: 'application/vnd.apple.mpegurl', m3u: 'audio/x-mpegurl', mpd: 'application/dash+xml', m4s: 'video/iso.segment' }

function memberMimeType(member: OutputMember): string | null {
  const extension = /\.([A-Za-z0-9]+)$/.exec(member.filename)?.[1]?.toLowerCase() ?? ''
  return member.mime_type ?? SEGMENT_MIME[extension] ?? mimeTypeForFilename(member.filename)
}

/**
 * The members of a multi-file output as recorded, each with its own
 * storage_url (presigned when managed, the destination's public URL or null
 * when external); undefined for a single-file output.
 */
export async function outputMembers(signer: PresignedGets, command: CommandDocument, result: OutputFileResult): Promise<MemberRecord[] | undefined> {
  if (!result.files) return undefined
  const internal = result.storage_location === 'INTERNAL'
  const publicBaseUrl = command.storage_destination?.publicBaseUrl
  return mapLimited(result.files, SIGNING_CONCURRENCY, async (member) => ({
    filename: member.filename,
    object_key: member.object_key,
    size_bytes: member.size_bytes,
    mime_type: memberMimeType(member),
    storage_url: internal ? await signer.url(member.object_key) : publicUrlFor(publicBaseUrl, member.object_key),
  }))
}

/**
 * An output's file id, derived from the command and alias: a redelivered
 * SUCCESS inserts the same ids, and the duplicate inserts fail harmlessly
 * instead of creating a second record.
 */
export function outputFileId(commandId: string, alias: string): string {
  return `file_${createHash('sha256').update(`${commandId}:${alias}`).digest('hex').slice(0, 32)}`
}

const BYTES_PER_MB = 1024 * 1024

/**
 * An output's bytes: the sum of a multi-file output's members, else the
 * single file's size_mbytes (MiB to six decimals, so within a byte of the
 * runner's count; the hold records the figure it counted and frees the same).
 */
function outputBytes(result: OutputFileResult): number {
  if (result.files) return result.files.reduce((sum, member) => sum + member.size_bytes, 0)
  return Math.round((result.size_mbytes ?? 0) * BYTES_PER_MB)
}

/**
 * What the outputs add to the account's storage quota: one hold per managed
 * output, under the file id its record will get, so a replayed SUCCESS
 * reserves nothing twice and deleting one output frees its own bytes.
 * Outputs in a customer's bucket are never counted.
 */
export function outputHolds(commandId: string, results: Record<string, OutputFileResult>): StorageHold[] {
  return Object.entries(results)
    .filter(([, result]) => result.storage_location === 'INTERNAL')
    .map(([alias, result]) => ({ id: outputFileId(commandId, alias), bytes: outputBytes(result) }))
}

/** Every object of the managed outputs: a single file's key, each member of a multi-file output. */
export function outputObjectKeys(results: Record<string, OutputFileResult>): string[] {
  return Object.values(results)
    .filter((result) => result.storage_location === 'INTERNAL')
    .flatMap((result) => (result.files ? result.files.map((member) => member.object_key) : [result.object_key]))
}

/** What a multi-file output's record adds: its members and, when managed, the keys of its playback copies (api/files/playback.ts). */
export interface MultiFileParts {
  members?: MemberRecord[] | undefined
  playbackKeys?: string[] | undefined
}

/** The `files` record of one output; a managed one expires after its command's retention_days, counted from `now`. */
export function outputFileDocument(
  command: CommandDocument,
  alias: string,
  result: OutputFileResult,
  storageUrl: string | null,
  now: Date,
  parts: MultiFileParts = {},
): FileDocument {
  const internal = result.storage_location === 'INTERNAL'
  return {
    ...NO_MEDIA_FACTS,
    _id: outputFileId(command._id, alias),
    account_id: command.account_id,
    command_id: command._id,
    output_alias: alias,
    filename: result.filename,
    status: 'STORED',
    service_store_type: 'OUTPUT',
    storage_location: result.storage_location,
    object_key: internal ? result.object_key : null,
    storage_url: storageUrl,
    external_uri: internal ? null : `s3://${result.bucket}/${result.object_key}`,
    external_object_key: internal ? null : result.object_key,
    is_deleted: false,
    deleted_at: null,
    // Customer buckets are never touched: an external output never expires.
    ...expiryFields(internal ? expiryOf(now, command.retention_days ?? null) : null),
    original_file_url: null,
    size_mbytes: result.size_mbytes,
    duration: result.duration,
    width: result.width,
    height: result.height,
    frame_rate: result.frame_rate,
    bitrate_video_kb: result.bitrate_video_kb,
    bitrate_audio_kb: result.bitrate_audio_kb,
    sample_rate: result.sample_rate,
    channels: result.channels,
    file_type: result.file_type,
    file_format: result.file_format,
    codec: result.codec,
    pixel_format: result.pixel_format,
    mime_type: result.mime_type,
    error_status: null,
    error_message: null,
    created_at: now,
    updated_at: now,
    ...(parts.members ? { members: parts.members } : {}),
    ...(parts.playbackKeys && parts.playbackKeys.length > 0 ? { playback_keys: parts.playbackKeys } : {}),
  }
}

/** The spec's OutputFileMeta of a stored output: what its command's result shows of it. */
export function outputFileMeta(file: FileDocument): OutputFileMeta {
  return {
    file_id: file._id,
    filename: file.filename,
    storage_url: file.storage_url,
    storage_location: file.storage_location,
    external_uri: file.external_uri,
    external_object_key: file.external_object_key,
    status: file.status,
    service_store_type: file.service_store_type,
    is_deleted: file.is_deleted,
    size_mbytes: file.size_mbytes,
    duration: file.duration,
    file_type: file.file_type,
    file_format: file.file_format,
    codec: file.codec,
    pixel_format: file.pixel_format,
    mime_type: file.mime_type,
    width: file.width,
    height: file.height,
    frame_rate: file.frame_rate,
    bitrate_video_kb: file.bitrate_video_kb,
    bitrate_audio_kb: file.bitrate_audio_kb,
    ...fileMembers(file),
  }
}
