/**
 * Unpacks an input_compressed_folder zip into the work directory, with yauzl
 * (lazy entries, sizes validated against the headers while streaming). Two
 * passes: the central directory is read whole and every entry judged
 * (folder-entries.ts) before a byte is written; then each file streams out,
 * its bytes counted against the caps as they come, because headers can lie.
 * Files are created with O_EXCL and O_NOFOLLOW, so nothing already in the
 * work dir is replaced and no link is followed; no link is ever created.
 */
import { constants } from 'node:fs'
import { mkdir, open } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { Transform, type TransformCallback } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import yauzl, { type Entry, type ZipFile } from 'yauzl'
import type { FolderLimits } from '../../../contracts/command-spec.js'
import { classifyEntry, FolderBudget, FolderEntryError, type EntryKind } from './folder-entries.js'

const FILE_MODE = 0o644
const DIRECTORY_MODE = 0o755
/** Compression methods yauzl inflates: stored and deflate. */
const STORED = 0
const DEFLATE = 8

/** What was unpacked: work-dir-relative paths of the files, in zip order. */
export interface UnpackedFolder {
  files: string[]
  bytes: number
}

/** Reads `zipPath` and writes its files under `workDir`; throws FolderEntryError naming the entry at fault. */
export async function unpackFolder(zipPath: string, workDir: string, limits: FolderLimits): Promise<UnpackedFolder> {
  let zip: ZipFile
  try {
    zip = await yauzl.openPromise(zipPath, { lazyEntries: true, autoClose: false, decodeStrings: false, validateEntrySizes: true, strictFileNames: true })
  } catch (error) {
    throw new FolderEntryError('FOLDER_INVALID', `not a readable zip: ${messageOf(error)}`)
  }
  try {
    const planned = await planEntries(zip, limits)
    return await writeEntries(zip, planned, workDir, limits)
  } finally {
    zip.close()
  }
}

interface PlannedEntry {
  entry: Entry
  name: string
  kind: Exclude<EntryKind, { kind: 'skip' }>
}

/** Pass 1: every central directory record, judged and tallied; nothing is written. */
async function planEntries(zip: ZipFile, limits: FolderLimits): Promise<PlannedEntry[]> {
  const budget = new FolderBudget(limits)
  budget.checkDeclaredCount(zip.entryCount)
  const planned: PlannedEntry[] = []
  const seen = new Set<string>()
  try {
    for await (const entry of zip.eachEntry()) {
      // decodeStrings is off so that names are judged here, with messages naming the entry, rather than by yauzl's generic error.
      const name = yauzl.getFileNameLowLevel(entry.generalPurposeBitFlag, entry.fileNameRaw, entry.extraFields, true)
      const record = { name, versionMadeBy: entry.versionMadeBy, externalFileAttributes: entry.externalFileAttributes, compressedSize: entry.compressedSize, uncompressedSize: entry.uncompressedSize }
      budget.add(record)
      const kind = classifyEntry(record)
      if (kind.kind === 'skip') continue
      // The second copy of a name would replace the first (or fail on O_EXCL half-way): refused up front.
      if (seen.has(kind.path)) throw new FolderEntryError('FOLDER_UNSAFE_ENTRY', `entry ${JSON.stringify(name)} appears twice`)
      seen.add(kind.path)
      // Same check as yauzl's own when it decodes names (belt and braces over entryNameProblem).
      const yauzlProblem = yauzl.validateFileName(kind.path)
      if (yauzlProblem) throw new FolderEntryError('FOLDER_UNSAFE_ENTRY', `entry ${JSON.stringify(name)}: ${yauzlProblem}`)
      if (kind.kind === 'file') checkDecodable(entry, name)
      planned.push({ entry, name, kind })
    }
  } catch (error) {
    if (error instanceof FolderEntryError) throw error
    throw new FolderEntryError('FOLDER_INVALID', `not a readable zip: ${messageOf(error)}`)
  }
  budget.checkTotalRatio()
  if (!planned.some((item) => item.kind.kind === 'file')) throw new FolderEntryError('FOLDER_INVALID', 'the zip holds no files')
  return planned
}

function checkDecodable(entry: Entry, name: string): void {
  if (entry.isEncrypted()) throw new FolderEntryError('FOLDER_INVALID', `entry ${JSON.stringify(name)} is encrypted; send a zip without a password`)
  if (entry.compressionMethod !== STORED && entry.compressionMethod !== DEFLATE) {
    throw new FolderEntryError('FOLDER_INVALID', `entry ${JSON.stringify(name)} uses compression method ${entry.compressionMethod}; only stored and deflate are supported`)
  }
}

/** Pass 2: directories, then each file streamed out under the running byte cap. */
async function writeEntries(zip: ZipFile, planned: readonly PlannedEntry[], workDir: string, limits: FolderLimits): Promise<UnpackedFolder> {
  const counter = { bytes: 0 }
  const files: string[] = []
  for (const { entry, name, kind } of planned) {
    const target = join(workDir, kind.path)
    if (kind.kind === 'directory') {
      await makeDirectory(target, name)
      continue
    }
    await makeDirectory(dirname(target), name)
    await writeEntry(zip, entry, name, target, counter, limits.maxBytes)
    files.push(kind.path)
  }
  return { files, bytes: counter.bytes }
}

/** The folders an entry needs; fails naming it when a file of the zip already holds one of their names. */
async function makeDirectory(path: string, name: string): Promise<void> {
  try {
    await mkdir(path, { recursive: true, mode: DIRECTORY_MODE })
  } catch (error) {
    throw new FolderEntryError('FOLDER_UNSAFE_ENTRY', `entry ${JSON.stringify(name)} cannot be created: ${messageOf(error)}`)
  }
}

async function writeEntry(zip: ZipFile, entry: Entry, name: string, target: string, counter: { bytes: number }, maxBytes: number): Promise<void> {
  const shown = JSON.stringify(name)
  let handle
  try {
    // O_EXCL: never replaces (or writes through) something already there; O_NOFOLLOW: never through a link.
    handle = await open(target, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, FILE_MODE)
  } catch (error) {
    throw new FolderEntryError('FOLDER_UNSAFE_ENTRY', `entry ${shown} cannot be created: ${messageOf(error)}`)
  }
  try {
    const source = await zip.openReadStreamPromise(entry).catch(async (error: unknown) => {
      await handle.close()
      throw error
    })
    // The write stream owns the handle from here: it closes it when the pipeline ends, well or not.
    await pipeline(source, byteCap(counter, maxBytes, shown), handle.createWriteStream())
  } catch (error) {
    if (error instanceof FolderEntryError) throw error
    // A failing write (ENOSPC, EIO) is the runner's trouble, not the zip's: it stays an internal error.
    if (isSystemError(error)) throw error
    throw new FolderEntryError('FOLDER_INVALID', `entry ${shown} cannot be read: ${messageOf(error)}`)
  }
}

/** An error of a system call (it names one); zlib's and yauzl's errors about the data do not. */
function isSystemError(error: unknown): boolean {
  return typeof error === 'object' && error !== null && typeof (error as NodeJS.ErrnoException).syscall === 'string'
}

/** Counts bytes as they stream and stops the stream at the cap, whatever the headers said. */
function byteCap(counter: { bytes: number }, maxBytes: number, shown: string): Transform {
  return new Transform({
    transform(chunk: Buffer, _encoding, callback: TransformCallback) {
      counter.bytes += chunk.length
      if (counter.bytes > maxBytes) {
        callback(new FolderEntryError('FOLDER_TOO_LARGE', `entry ${shown} takes the folder past ${maxBytes} uncompressed bytes, the cap on this plan`))
        return
      }
      callback(null, chunk)
    },
  })
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}
