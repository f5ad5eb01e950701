/** `sd_` followed by 32 lowercase hex characters, as the spec fixes (see api/ids.ts). */
export const STORAGE_DESTINATION_ID_PATTERN = '^sd_[0-9a-f]{32}$'
const STORAGE_DESTINATION_ID = new RegExp(STORAGE_DESTINATION_ID_PATTERN)

export function isStorageDestinationId(value: string): boolean {
  return STORAGE_DESTINATION_ID.test(value)
}
