/**
 * What a finished command's outputs add to its account's storage quota, pure:
 * one hold per managed output, under the file id its record will get, so a
 * replayed SUCCESS reserves nothing twice and deleting one output frees its
 * own bytes. Outputs in a customer's bucket are never counted.
 */
import type { OutputFileResult } from '../../contracts/status-events.js'
import { outputFileId } from './output-files.js'
import type { StorageHold } from './storage-quota.js'

const BYTES_PER_MB = 1024 * 1024

/**
 * An output's bytes: the sum of a multi-file output's members, else the
 * single file's size_mbytes (MiB to six decimals, so within a byte of the
 * runner's count; the hold records the figure it counted and frees the same).
 */
export function outputBytes(result: OutputFileResult): number {
  if (result.files) return result.files.reduce((sum, member) => sum + member.size_bytes, 0)
  return Math.round((result.size_mbytes ?? 0) * BYTES_PER_MB)
}

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
