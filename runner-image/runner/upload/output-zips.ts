/**
 * Outputs delivered as zips (CommandSpec.compressOutputs,
 * contracts/compressed-outputs.ts). The upload phase, and only it, plans the
 * zips from what it collected (files ffmpeg wrote, already checked to be
 * regular files and counted against the file-count cap), writes each into the
 * runner's own `.ffkube/zips/` (ffmpeg cannot name `.ffkube`: phase-state.ts),
 * and uploads the zip instead of its files.
 *
 * yazl writes the zip: it is yauzl's sibling (same author; yauzl unpacks input
 * folders), streams each entry from disk without holding it in memory, and
 * chooses stored or deflate per entry, switching to ZIP64 by itself.
 */
import { constants, createWriteStream } from 'node:fs'
import { mkdir, open, rm, stat } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import type { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { ZipFile } from 'yazl'
import { ALL_OUTPUTS_ALIAS, ALL_OUTPUTS_ZIP, aliasZipFilename, type CompressOutputs } from '../../../contracts/compressed-outputs.js'
import { RunnerFailure } from '../failure.js'
import { STATE_DIR } from '../phase-state.js'
import type { CollectedOutput } from '../produced-files.js'

/** Where the zips are written, relative to the work dir. */
export const ZIP_DIR = `${STATE_DIR}/zips`

/** One zip to write and store. */
export interface OutputZip {
  /** The alias output_files reports it under: the zipped alias, or out_all. */
  alias: string
  /** Its name in the command's folder: `<alias>.zip` or `outputs.zip`. */
  filename: string
  /** Relative to the work dir. */
  path: string
  /** Each file inside: its name in the zip and its path relative to the work dir. */
  entries: { name: string; path: string }[]
}

/** Already-compressed media and images: stored as they are, since deflate would spend CPU for nothing. */
const STORED_EXTENSIONS = new Set([
  'mp4', 'm4v', 'm4a', 'm4s', 'mov', 'mkv', 'webm', 'ts', 'mpg', 'mpeg', 'avi', 'flv', '3gp', 'mp3', 'aac', 'ac3', 'eac3',
  'opus', 'ogg', 'oga', 'weba', 'flac', 'jpg', 'jpeg', 'png', 'gif', 'webp', 'avif', 'heic', 'zip', 'gz',
])

/** Pure. Whether an entry is deflated: text (playlists, manifests, subtitles) and raw media are; compressed media is not. */
export function deflates(name: string): boolean {
  const extension = /\.([A-Za-z0-9]+)$/.exec(name)?.[1]?.toLowerCase() ?? ''
  return !STORED_EXTENSIONS.has(extension)
}

/**
 * Pure. Splits the collected outputs into the zips to write and the outputs
 * still stored file by file. `allFiles`: the command's objects as they would
 * be stored unzipped (name → path, distinct names), which `true` zips whole.
 */
export function planZips(
  collected: readonly CollectedOutput[],
  compress: CompressOutputs | undefined,
  allFiles: readonly { filename: string; path: string }[],
): { zips: OutputZip[]; plain: CollectedOutput[] } {
  if (compress === undefined) return { zips: [], plain: [...collected] }
  if (compress === true) {
    const entries = allFiles.map((file) => ({ name: file.filename, path: file.path }))
    return { zips: [{ alias: ALL_OUTPUTS_ALIAS, filename: ALL_OUTPUTS_ZIP, path: `${ZIP_DIR}/${ALL_OUTPUTS_ZIP}`, entries }], plain: [] }
  }
  const listed = new Set(compress)
  const zips = collected
    .filter(({ file }) => listed.has(file.alias))
    .map(({ file, members }): OutputZip => {
      const filename = aliasZipFilename(file.alias)
      const entries = members === null ? [{ name: file.filename, path: file.path }] : members.map((member) => ({ name: member.relative, path: member.path }))
      return { alias: file.alias, filename, path: `${ZIP_DIR}/${filename}`, entries }
    })
  return { zips, plain: collected.filter(({ file }) => !listed.has(file.alias)) }
}

/**
 * Opens one entry for reading: never through a link (O_NOFOLLOW), never
 * blocking on a FIFO (O_NONBLOCK), and only a regular file; collectOutputs
 * checked this already, this holds if the work dir changed since.
 */
async function openEntry(workDir: string, entry: { name: string; path: string }, alias: string): Promise<Readable> {
  const handle = await open(join(workDir, entry.path), constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK).catch(() => null)
  if (handle === null || !(await handle.stat()).isFile()) {
    await handle?.close()
    throw new RunnerFailure('OUTPUT_NOT_REGULAR_FILE', `${alias}: ${entry.name} is not a regular file; nothing was stored`)
  }
  return handle.createReadStream()
}

/** Writes one zip into ZIP_DIR, each entry streamed from disk; returns its size in bytes. */
export async function writeZip(workDir: string, zip: OutputZip): Promise<number> {
  const target = join(workDir, zip.path)
  await mkdir(dirname(target), { recursive: true, mode: 0o700 })
  const zipfile = new ZipFile()
  const output = zipfile.outputStream as Readable
  let failure: unknown = null
  zipfile.on('error', (error: unknown) => {
    failure ??= error
    output.destroy(error as Error)
  })
  for (const entry of zip.entries) {
    zipfile.addReadStreamLazy(entry.name, { compress: deflates(entry.name) }, (callback) => {
      openEntry(workDir, entry, zip.alias).then(
        (stream) => callback(null, stream),
        (error: unknown) => callback(error, undefined as unknown as NodeJS.ReadableStream),
      )
    })
  }
  zipfile.end()
  try {
    // 'wx': a zip is written once; something already there is not ours to replace.
    await pipeline(output, createWriteStream(target, { flags: 'wx', mode: 0o600 }))
  } catch (error) {
    const cause = failure ?? error
    if (cause instanceof RunnerFailure) throw cause
    throw new RunnerFailure('INTERNAL_ERROR', `writing ${zip.filename} failed: ${cause instanceof Error ? cause.message : String(cause)}`)
  }
  return (await stat(target)).size
}

/** Removes the zips (after their upload, or its failure): the work dir keeps no second copy of the outputs. */
export async function removeZips(workDir: string): Promise<void> {
  await rm(join(workDir, ZIP_DIR), { recursive: true, force: true })
}
