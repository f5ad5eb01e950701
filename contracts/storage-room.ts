/**
 * The storage quota's rule on the runner's side: a command's managed outputs
 * must fit in the room its account had left when the command was handed off
 * (CommandSpec.storageRoomBytes). The API counts and reserves the bytes
 * (api/files/storage-quota.ts); the runner only refuses, before storing,
 * what could never be reserved. Pure.
 */

const GIB = 1024 ** 3
const MIB = 1024 * 1024

/** Bytes as people read them, with the exact count: `12.50 MiB (13107200 bytes)`. */
export function describeBytes(bytes: number): string {
  const unit = bytes >= GIB ? `${(bytes / GIB).toFixed(2)} GiB` : `${(bytes / MIB).toFixed(2)} MiB`
  return `${unit} (${bytes} bytes)`
}

/** Why outputs of `bytes` do not fit in `roomBytes`; null when they do (or no room was given: no quota). */
export function storageRoomRefusal(bytes: number, roomBytes: number | undefined): string | null {
  if (roomBytes === undefined || bytes <= roomBytes) return null
  return (
    `the outputs hold ${describeBytes(bytes)}, ${describeBytes(bytes - roomBytes)} more than the ${describeBytes(roomBytes)} ` +
    "the account had left of its plan's storage quota when the command started; delete files (DELETE /api/v1/files/:fileId) or wait for them to expire; none of the outputs was stored"
  )
}
