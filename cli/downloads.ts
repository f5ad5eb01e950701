/**
 * Writes a command's outputs into a directory. The names come from the
 * server, so they are treated as hostile: only the last path segment is
 * kept (a multi-file output's members keep their folders, each segment
 * cleaned alike), characters outside a plain set become `_`, leading dots
 * go (no `.bashrc` in a home directory, no `..`), and the file is written beside its final
 * name and linked into place, which neither follows a symlink nor replaces
 * an existing file unless --force.
 */
import { randomBytes } from 'node:crypto'
import { createWriteStream } from 'node:fs'
import { link, mkdir, rename, stat, unlink } from 'node:fs/promises'
import { basename, join, resolve, sep } from 'node:path'
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import type { ReadableStream as WebReadableStream } from 'node:stream/web'
import type { CommandPollResponse, OutputFileMeta } from '../client/index.js'
import { CliError, EXIT, UsageError } from './errors.js'

/** A file name safe to create in the target directory; `fallback` (the alias) when nothing usable remains. Pure. */
export function safeOutputName(raw: string | null | undefined, fallback: string): string {
  const last = (raw ?? '').split(/[/\\]/).pop() ?? ''
  const cleaned = last
    .normalize('NFC')
    .replace(/[^\p{L}\p{N}._+ -]+/gu, '_')
    .replace(/^[.\s-]+/, '')
    .replace(/\s+$/, '')
    .slice(-200)
  return cleaned === '' || /^_+$/.test(cleaned) ? fallback : cleaned
}

/** One output as the CLI handled it. */
export type DownloadResult =
  | { alias: string; path: string; bytes: number; /** Set for a file of a multi-file output other than its main one: the output's media facts are not this file's. */ member?: string }
  | { alias: string; skipped: string }

export interface DownloadOptions {
  dir: string
  force: boolean
  fetch?: typeof globalThis.fetch
}

/** Fails before a command is submitted when a name it will write already exists (and --force is not given). */
export async function refuseExisting(names: readonly string[], dir: string, force: boolean): Promise<void> {
  if (force) return
  for (const name of names) {
    const path = join(dir, safeOutputName(name, name))
    const exists = await stat(path).then(
      () => true,
      () => false,
    )
    if (exists) throw new UsageError(`${path} exists; pass --force to replace it, --dir to write elsewhere, or --no-download`)
  }
}

/**
 * A member's relative path made safe, segment by segment as safeOutputName
 * makes a name; null when a segment has nothing usable left or the path is
 * absurdly deep (a hostile server's). Pure.
 */
export function safeMemberPath(raw: string): string | null {
  const segments = raw.split(/[/\\]/).filter((segment) => segment !== '' && segment !== '.')
  if (segments.length === 0 || segments.length > MAX_MEMBER_DEPTH) return null
  const safe = segments.map((segment) => safeOutputName(segment, ''))
  return safe.some((segment) => segment === '') ? null : safe.join('/')
}

/** Folders a member may sit in below the download directory; FFmpeg's layouts use one or two (`v0/seg_001.ts`). */
const MAX_MEMBER_DEPTH = 8

/** Whether an output has several files to download, each into its relative place. */
function isMultiFile(meta: OutputFileMeta): boolean {
  // Read defensively: a server of an older version sends neither field.
  return Array.isArray(meta.files) && (meta.files.length > 1 || meta.files.some((file) => String(file.filename).includes('/')))
}

/**
 * Downloads every output of a SUCCESS command that has a storage_url, in
 * alias order; a multi-file output downloads every one of its files, in
 * their relative layout under the directory (`master.m3u8`, `v0/prog.m3u8`,
 * `v0/seg_000.ts`…), so a playlist plays from the disk.
 */
export async function downloadOutputs(command: CommandPollResponse, options: DownloadOptions): Promise<DownloadResult[]> {
  const results: DownloadResult[] = []
  const taken = new Set<string>()
  // Two outputs a hostile server named alike must not land on one file.
  const claim = (name: string, alias: string) => {
    const unique = taken.has(name) ? `${alias}-${name}` : name
    taken.add(unique)
    return unique
  }
  for (const [alias, meta] of Object.entries(command.output_files ?? {})) {
    const skipped = skipReason(meta)
    if (skipped) {
      results.push({ alias, skipped })
      continue
    }
    if (!isMultiFile(meta)) {
      results.push({ alias, ...(await downloadOne(meta.storage_url!, claim(safeOutputName(meta.filename, alias), alias), options)) })
      continue
    }
    for (const file of meta.files) {
      const path = safeMemberPath(String(file.filename))
      if (path === null || file.storage_url === null) {
        results.push({ alias, skipped: path === null ? `refusing the file name "${file.filename}"` : `${file.filename} has no download URL` })
        continue
      }
      const downloaded = await downloadOne(file.storage_url, claim(path, alias), options)
      results.push(file.filename === meta.filename ? { alias, ...downloaded } : { alias, member: file.filename, ...downloaded })
    }
  }
  return results
}

function skipReason(meta: OutputFileMeta): string | null {
  if (meta.storage_url) return null
  if (meta.external_uri) return `stored in your bucket at ${meta.external_uri}; it has no download URL`
  return meta.is_deleted ? 'deleted' : `no download URL (status ${meta.status})`
}

/** Downloads `url` to `name` (a safe name, or a safe '/'-separated path of a multi-file output's member) under options.dir. */
async function downloadOne(url: string, name: string, options: DownloadOptions): Promise<{ path: string; bytes: number }> {
  const root = resolve(options.dir)
  const path = resolve(root, name)
  const dir = resolve(path, '..')
  if (basename(path) !== basename(name) || !(dir === root || dir.startsWith(`${root}${sep}`))) throw new CliError(`refusing the output name "${name}": it leaves ${root}`, EXIT.API)
  if (dir !== root) await mkdir(dir, { recursive: true })
  const response = await (options.fetch ?? globalThis.fetch)(url)
  if (!response.ok || !response.body) throw new CliError(`downloading ${name} failed: GET answered ${response.status}`, EXIT.API)
  const temporary = join(dir, `.${basename(name)}.${randomBytes(6).toString('hex')}.partial`)
  try {
    // wx: a new file, never one that was there (nor a symlink planted under the temporary name).
    await pipeline(Readable.fromWeb(response.body as WebReadableStream<Uint8Array>), createWriteStream(temporary, { flags: 'wx', mode: 0o644 }))
    const { size } = await stat(temporary)
    if (options.force) {
      // rename replaces the name itself: a symlink at `path` is replaced, not followed.
      await rename(temporary, path)
    } else {
      await link(temporary, path).catch((error: NodeJS.ErrnoException) => {
        throw error.code === 'EEXIST' ? new UsageError(`${path} exists; pass --force to replace it (the output stays on the service: \`ffkube status\` shows its URL)`) : error
      })
      await unlink(temporary)
    }
    return { path, bytes: size }
  } catch (error) {
    await unlink(temporary).catch(() => undefined)
    throw error
  }
}
