/**
 * What one entry of an input_compressed_folder zip may be, judged from its
 * central directory record alone: a regular file or a directory with a
 * relative name that stays inside the work directory and clear of the
 * runner's own layout. Pure; folder-unpack.ts does the I/O.
 */
import type { FolderLimits } from '../../../contracts/command-spec.js'

/** The entry's fields this module reads (yauzl's Entry has them all). */
export interface EntryRecord {
  /** Decoded, '/'-separated, as stored: a directory ends with '/'. */
  name: string
  /** The "version made by" field: its high byte is the host system (3 = Unix). */
  versionMadeBy: number
  externalFileAttributes: number
  compressedSize: number
  uncompressedSize: number
}

export type EntryKind = { kind: 'file'; path: string } | { kind: 'directory'; path: string } | { kind: 'skip'; reason: string }

/** Why an entry cannot be unpacked; `status` says whether it is unsafe or over a cap. */
export class FolderEntryError extends Error {
  override readonly name = 'FolderEntryError'
  constructor(
    readonly status: 'FOLDER_UNSAFE_ENTRY' | 'FOLDER_TOO_LARGE' | 'FOLDER_INVALID' | 'FOLDER_UNSAFE_PLAYLIST',
    message: string,
  ) {
    super(message)
  }
}

/**
 * Top-level names the runner itself uses in the work dir (fetched inputs,
 * declared outputs, its phase state): an entry there could replace an input
 * or an output, or the state the next phase reads.
 */
export const RESERVED_TOP_LEVEL = ['inputs', 'outputs', '.ffkube'] as const

/** Entries only an archiver's own bookkeeping writes (macOS Finder's resource forks and folder settings): skipped, not refused. */
const ARCHIVER_METADATA_DIR = '__MACOSX'
const ARCHIVER_METADATA_FILE = '.DS_Store'

/** Names longer than Linux allows fail at open(); refused up front with a clearer message. */
const MAX_SEGMENT_BYTES = 255
const MAX_NAME_BYTES = 1024

/** Unix file types in the high 16 bits of the external attributes (st_mode). */
const S_IFMT = 0o170000
const S_IFREG = 0o100000
const S_IFDIR = 0o040000
const S_IFLNK = 0o120000
/** MS-DOS attribute bit of a directory. */
const DOS_DIRECTORY = 0x10
const HOST_UNIX = 3

/** Entries under this many uncompressed bytes are never judged by ratio: a small text file or an empty one compresses absurdly well. */
export const RATIO_FLOOR_BYTES = 1024 * 1024

/** Why `name` is not a safe relative entry name, or null. `name` has no trailing '/'. */
export function entryNameProblem(name: string): string | null {
  if (name === '') return 'has an empty name'
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(name)) return 'has a control character in its name'
  if (name.includes('\\')) return 'has a backslash in its name (only "/" separates folders)'
  if (name.startsWith('/')) return 'has an absolute name'
  if (/^[A-Za-z]:/.test(name)) return 'has a drive letter in its name'
  if (Buffer.byteLength(name) > MAX_NAME_BYTES) return `has a name longer than ${MAX_NAME_BYTES} bytes`
  const segments = name.split('/')
  if (segments.includes('..')) return 'has a ".." segment in its name, which would leave the folder'
  if (segments.some((segment) => segment === '' || segment === '.')) return 'has an empty or "." segment in its name'
  if (segments.some((segment) => Buffer.byteLength(segment) > MAX_SEGMENT_BYTES)) return `has a name segment longer than ${MAX_SEGMENT_BYTES} bytes`
  const top = segments[0] as string
  if ((RESERVED_TOP_LEVEL as readonly string[]).includes(top)) return `uses the reserved top-level name "${top}" (the runner's own: ${RESERVED_TOP_LEVEL.join(', ')})`
  // Hidden names: ffmpeg commands cannot name them anyway (a filename may not start with "."), and a dot name near the runner's own is confusing at best.
  if (segments.some((segment) => segment.startsWith('.'))) return 'has a name segment starting with "."'
  return null
}

/** The Unix file type of the entry, when its attributes carry one; null otherwise. */
function unixType(entry: EntryRecord): number | null {
  const type = (entry.externalFileAttributes >>> 16) & S_IFMT
  return type === 0 ? null : type
}

/** Whether the entry is a directory, a regular file or something else (a link, a device, a FIFO). */
function entryType(entry: EntryRecord): 'file' | 'directory' | 'link' | 'special' {
  const type = unixType(entry)
  // A link is refused whatever host the zip claims: some archivers set Unix modes under a DOS host byte.
  if (type === S_IFLNK) return 'link'
  if (type !== null && (entry.versionMadeBy >>> 8 === HOST_UNIX || type === S_IFREG || type === S_IFDIR)) {
    if (type === S_IFDIR) return 'directory'
    if (type === S_IFREG) return entry.name.endsWith('/') ? 'directory' : 'file'
    return 'special'
  }
  if (entry.name.endsWith('/') || (entry.externalFileAttributes & DOS_DIRECTORY) !== 0) return 'directory'
  return 'file'
}

/** Whether the entry is an archiver's bookkeeping, not the user's content. */
function isArchiverMetadata(name: string): boolean {
  const segments = name.split('/')
  return segments[0] === ARCHIVER_METADATA_DIR || segments[segments.length - 1] === ARCHIVER_METADATA_FILE
}

/** Classifies one entry by its central directory record; throws FolderEntryError naming it. */
export function classifyEntry(entry: EntryRecord): EntryKind {
  const shown = JSON.stringify(entry.name)
  const type = entryType(entry)
  const name = entry.name.replace(/\/+$/, '')
  if (isArchiverMetadata(name) && type !== 'link' && type !== 'special') return { kind: 'skip', reason: 'archiver metadata' }
  const problem = entryNameProblem(name)
  if (problem) throw new FolderEntryError('FOLDER_UNSAFE_ENTRY', `entry ${shown} ${problem}`)
  if (type === 'link') throw new FolderEntryError('FOLDER_UNSAFE_ENTRY', `entry ${shown} is a symbolic link; only files and folders may be unpacked`)
  if (type === 'special') throw new FolderEntryError('FOLDER_UNSAFE_ENTRY', `entry ${shown} is not a regular file or folder`)
  if (type === 'directory') {
    if (entry.uncompressedSize > 0) throw new FolderEntryError('FOLDER_INVALID', `entry ${shown} is a folder with ${entry.uncompressedSize} bytes of data`)
    return { kind: 'directory', path: name }
  }
  return { kind: 'file', path: name }
}

/**
 * Tallies the declared sizes of a zip's entries against the caps, entry by
 * entry as the central directory is read, so a bomb is refused before a
 * byte is written.
 */
export class FolderBudget {
  #entries = 0
  #bytes = 0
  #compressed = 0

  constructor(private readonly limits: FolderLimits) {}

  /** Refuses a zip whose central directory announces more entries than the cap. */
  checkDeclaredCount(count: number): void {
    if (count > this.limits.maxEntries) {
      throw new FolderEntryError('FOLDER_TOO_LARGE', `the zip has ${count} entries; at most ${this.limits.maxEntries} are allowed on this plan`)
    }
  }

  /** Counts one entry's declared sizes; throws naming it when a cap is passed. */
  add(entry: EntryRecord): void {
    this.#entries += 1
    this.checkDeclaredCount(this.#entries)
    this.#bytes += entry.uncompressedSize
    this.#compressed += entry.compressedSize
    const shown = JSON.stringify(entry.name)
    if (this.#bytes > this.limits.maxBytes) {
      throw new FolderEntryError('FOLDER_TOO_LARGE', `entry ${shown} takes the folder past ${this.limits.maxBytes} uncompressed bytes, the cap on this plan`)
    }
    if (entry.uncompressedSize > RATIO_FLOOR_BYTES && entry.uncompressedSize > this.limits.maxRatio * entry.compressedSize) {
      throw new FolderEntryError(
        'FOLDER_TOO_LARGE',
        `entry ${shown} expands ${ratio(entry.uncompressedSize, entry.compressedSize)} times (${entry.compressedSize} to ${entry.uncompressedSize} bytes); at most ${this.limits.maxRatio} is allowed on this plan`,
      )
    }
  }

  /** After the last entry: the whole folder's ratio. */
  checkTotalRatio(): void {
    if (this.#bytes > RATIO_FLOOR_BYTES && this.#bytes > this.limits.maxRatio * this.#compressed) {
      throw new FolderEntryError('FOLDER_TOO_LARGE', `the zip expands ${ratio(this.#bytes, this.#compressed)} times; at most ${this.limits.maxRatio} is allowed on this plan`)
    }
  }
}

function ratio(uncompressed: number, compressed: number): string {
  return compressed === 0 ? 'without bound' : String(Math.round(uncompressed / compressed))
}
