/**
 * Which files a command delivers, decided from its spec and phase 1's record
 * only, never from what is in the work dir: its declared outputs, or for a
 * download-only YTDLP_COMMAND the downloads themselves. Phase 2 checks they
 * were written before it probes them; phase 3 checks again before it uploads,
 * since it may be a later process in a work dir ffmpeg wrote to.
 */
import { lstat } from 'node:fs/promises'
import { extname, join, normalize } from 'node:path'
import type { CommandSpec } from '../../contracts/command-spec.js'
import { outputPath } from '../../contracts/ffmpeg-paths.js'
import { RunnerFailure } from './failure.js'
import type { Fetched } from './phase-state.js'

export interface ProducedFile {
  alias: string
  filename: string
  /** Relative to the work dir. */
  path: string
}

/** Pure. */
export function producedFiles(spec: CommandSpec, fetched: Fetched): ProducedFile[] {
  if (spec.commandType === 'YTDLP_COMMAND' && spec.ffmpegCommands.length === 0) {
    return Object.entries(fetched.downloads ?? {}).map(([alias, path]) => {
      const suffix = alias.replace(/^in_/, '')
      return { alias: `out_${suffix}`, filename: `${suffix}${extname(path)}`, path }
    })
  }
  return Object.entries(spec.outputFiles).map(([alias, filename]) => ({ alias, filename, path: outputPath(filename) }))
}

/** Only fetched or declared files are ever delivered: `inputs/…` (downloads) or `outputs/…`, never a path out of the work dir. */
const DELIVERABLE = /^(?:inputs|outputs)\/[^/]+$/

/**
 * Every file exists as a regular file where it should: OUTPUT_MISSING
 * otherwise. A directory or a link in an output's place is treated as missing:
 * nothing but the bytes ffmpeg wrote at that name is read.
 */
export async function assertWritten(workDir: string, files: readonly ProducedFile[]): Promise<void> {
  for (const file of files) {
    const path = normalize(file.path)
    if (!DELIVERABLE.test(path)) throw new RunnerFailure('INTERNAL_ERROR', `${file.alias} is not a deliverable path`)
    let regular = false
    try {
      regular = (await lstat(join(workDir, path))).isFile()
    } catch {
      // Absent: reported below.
    }
    if (!regular) throw new RunnerFailure('OUTPUT_MISSING', `no command wrote ${file.alias} (${file.filename})`)
  }
}
