/**
 * Writes a command's outputs into a directory. The names come from the
 * server, so they are treated as hostile: only the last path segment is
 * kept, characters outside a plain set become `_`, leading dots go (no
 * `.bashrc` in a home directory), and the file is written beside its final
 * name and linked into place, which neither follows a symlink nor replaces
 * an existing file unless --force.
 */
import { randomBytes } from 'node:crypto'
import { createWriteStream } from 'node:fs'
import { link, rename, stat, unlink } from 'node:fs/promises'
import { basename, join, resolve } from 'node:path'
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
  | { alias: string; path: string; bytes: number }
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

/** Downloads every output of a SUCCESS command that has a storage_url, in alias order. */
export async function downloadOutputs(command: CommandPollResponse, options: DownloadOptions): Promise<DownloadResult[]> {
  const results: DownloadResult[] = []
  const taken = new Set<string>()
  for (const [alias, meta] of Object.entries(command.output_files ?? {})) {
    const skipped = skipReason(meta)
    if (skipped) {
      results.push({ alias, skipped })
      continue
    }
    let name = safeOutputName(meta.filename, alias)
    // Two outputs a hostile server named alike must not land on one file.
    if (taken.has(name)) name = `${alias}-${name}`
    taken.add(name)
    results.push({ alias, ...(await downloadOne(meta.storage_url!, name, options)) })
  }
  return results
}

function skipReason(meta: OutputFileMeta): string | null {
  if (meta.storage_url) return null
  if (meta.external_uri) return `stored in your bucket at ${meta.external_uri}; it has no download URL`
  return meta.is_deleted ? 'deleted' : `no download URL (status ${meta.status})`
}

async function downloadOne(url: string, name: string, options: DownloadOptions): Promise<{ path: string; bytes: number }> {
  const dir = resolve(options.dir)
  const path = join(dir, name)
  if (basename(path) !== name || resolve(path, '..') !== dir) throw new CliError(`refusing the output name "${name}": it leaves ${dir}`, EXIT.API)
  const response = await (options.fetch ?? globalThis.fetch)(url)
  if (!response.ok || !response.body) throw new CliError(`downloading ${name} failed: GET answered ${response.status}`, EXIT.API)
  const temporary = join(dir, `.${name}.${randomBytes(6).toString('hex')}.partial`)
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
