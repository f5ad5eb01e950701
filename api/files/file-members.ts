/**
 * The `files` list and `file_count` of a stored file or output, as responses
 * show them, and every object a file's record holds in its bucket. A
 * multi-file output lists each of its members; any other file lists itself,
 * so a client reads one shape always. Pure.
 */
import type { FileDocument } from './file-document.js'
import type { FileMember } from './schemas.js'

/** Megabytes are binary (MiB), as size_mbytes is everywhere (contracts/output-file-meta.ts). */
const BYTES_PER_MB = 1024 * 1024

/** Bytes as size_mbytes, to the byte's sixth decimal like the probe's. */
export function megabytes(bytes: number): number {
  return Math.round((bytes / BYTES_PER_MB) * 1e6) / 1e6
}

/** `files` and `file_count` of a record. */
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
