/**
 * The fetch phase's input_compressed_folder: the zip is fetched like an input
 * (through the URL guard, or from managed storage for the service's own
 * storage_url), unpacked into the work dir root (folder-unpack.ts), and every
 * file the demuxers could read as a list is checked (contracts/media-lists.ts),
 * all before ffmpeg runs. The zip itself is removed once unpacked.
 */
import { mkdir, rm, stat } from 'node:fs/promises'
import { join } from 'node:path'
import type { CommandSpec, FolderLimits } from '../../../contracts/command-spec.js'
import { guardedDownload, UrlGuardError, type GuardedFetchOptions } from '../../../contracts/url-guard-fetch.js'
import type { RunnerErrorStatus } from '../../../contracts/status-events.js'
import { RunnerFailure } from '../failure.js'
import { STATE_DIR } from '../phase-state.js'
import { FolderEntryError } from './folder-entries.js'
import { isDashManifest, isHlsPlaylist, listProblems, scanConcat, type PlaylistProblem } from '../../../contracts/media-lists.js'
import { unpackFolder } from './folder-unpack.js'
import { isManagedStorageUrl, type ManagedInputs } from './inputs.js'
import { readHead } from '../file-head.js'

/** The field's name, as the API and the messages say it. */
const FIELD = 'input_compressed_folder'

/** Caps for a spec that carries none (the smallest plan's defaults, api/commands/command-limits.ts). */
export const FALLBACK_FOLDER_LIMITS: FolderLimits = { maxBytes: 256 * 1024 ** 2, maxEntries: 1000, maxRatio: 50 }

/** Files up to this size are read whole and judged as every kind of list; larger ones by their head. */
const READ_WHOLE_BYTES = 16 * 1024 ** 2
const HEAD_BYTES = 64 * 1024

/** Fetches, unpacks and checks the command's folder, if it has one; returns the unpacked files' work-dir paths. */
export async function fetchCompressedFolder(
  spec: CommandSpec,
  workDir: string,
  options: GuardedFetchOptions,
  storage: ManagedInputs['storage'],
): Promise<string[]> {
  const url = spec.inputCompressedFolder
  if (!url) return []
  const limits = spec.limits?.folder ?? FALLBACK_FOLDER_LIMITS
  const zipPath = join(workDir, STATE_DIR, 'input-folder.zip')
  await mkdir(join(workDir, STATE_DIR), { recursive: true })
  // A presigned GET of the managed bucket, verified by the API: read without the private-network guard, never redirected.
  const own = spec.managedCompressedFolder === true && isManagedStorageUrl(url, storage)
  const capped = { ...options, maxBytes: Math.min(options.maxBytes, zipByteCap(limits)) }
  try {
    await guardedDownload(url, zipPath, own ? { ...capped, allowPrivateNetworks: true, maxRedirects: 0 } : capped)
  } catch (error) {
    throw folderFetchFailure(error)
  }
  try {
    const unpacked = await unpackFolder(zipPath, workDir, limits)
    await checkLists(workDir, unpacked.files)
    return unpacked.files
  } catch (error) {
    if (error instanceof FolderEntryError) throw new RunnerFailure(error.status, `${FIELD}: ${error.message}`)
    throw error
  } finally {
    await rm(zipPath, { force: true })
  }
}

/**
 * The most bytes a zip within the caps can take: its data is at most the
 * uncompressed cap (stored entries), plus two headers per entry with names
 * of up to 1 KiB each. A larger download is refused before it is unpacked.
 */
export function zipByteCap(limits: FolderLimits): number {
  return limits.maxBytes + limits.maxEntries * 4096 + 1024 * 1024
}

/** Maps a fetch failure to the command's error_status (INPUT_*), naming the field. */
function folderFetchFailure(error: unknown): RunnerFailure {
  if (error instanceof UrlGuardError) return new RunnerFailure(`INPUT_${error.code}` as RunnerErrorStatus, `${FIELD}: ${error.message}`)
  return new RunnerFailure('INPUT_UNREACHABLE', `${FIELD}: ${error instanceof Error ? error.message : String(error)}`)
}

/** Refuses the folder at the first list entry that points outside it. */
async function checkLists(workDir: string, files: readonly string[]): Promise<void> {
  for (const file of files) {
    const problem = await fileProblem(join(workDir, file))
    if (problem) {
      // A problem of the file as a whole (a manifest outside what is read, a list too large) names no entry.
      const entry = problem.entry === '' ? '' : `entry ${JSON.stringify(problem.entry)} `
      throw new FolderEntryError('FOLDER_UNSAFE_PLAYLIST', `file ${JSON.stringify(file)} line ${problem.line}: ${entry}${problem.reason}`)
    }
  }
}

/**
 * The first problem of one file read as a list. Bytes are read as latin1,
 * one character each, so every ASCII rule sees exactly the bytes FFmpeg sees.
 */
async function fileProblem(path: string): Promise<PlaylistProblem | null> {
  const size = (await stat(path)).size
  if (size <= READ_WHOLE_BYTES) return textsOf(await readHead(path, size)).flatMap(listProblems)[0] ?? null
  const head = (await readHead(path, HEAD_BYTES)).toString('latin1')
  // A large file is fine when no list parser would get past its start: binary media, or a text that is no list.
  if (isHlsPlaylist(head) || isDashManifest(head) || /^\uFEFF?\s*</.test(head) || scanConcat(head).stopped === null) {
    return { line: 1, entry: '', reason: `reads as a playlist or concat list larger than ${READ_WHOLE_BYTES} bytes, too large to check` }
  }
  return scanConcat(head).problems[0] ?? null
}

/**
 * The file as FFmpeg's byte-wise list parsers see it, and, when it starts
 * like UTF-16 (a byte order mark, or `<` beside a zero byte), as libxml2
 * would decode a DASH manifest.
 */
function textsOf(buffer: Buffer): string[] {
  const texts = [buffer.toString('latin1')]
  const [a, b] = [buffer[0], buffer[1]]
  if ((a === 0xff && b === 0xfe) || (a === 0x3c && b === 0x00)) texts.push(buffer.toString('utf16le'))
  if ((a === 0xfe && b === 0xff) || (a === 0x00 && b === 0x3c)) texts.push(Buffer.from(buffer.subarray(0, buffer.length & ~1)).swap16().toString('utf16le'))
  return texts
}

