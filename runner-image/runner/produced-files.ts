/**
 * Which files a command delivers, decided from its spec and the fetch phase's
 * record only, never from what is in the work dir: its declared outputs, or
 * for a download-only YTDLP_COMMAND the downloads themselves. Pure.
 */
import { extname } from 'node:path'
import type { CommandSpec } from '../../contracts/command-spec.js'
import { outputPath } from '../../contracts/ffmpeg-paths.js'
import type { ProducedFile } from './outputs-step.js'
import type { Fetched } from './phase-state.js'

export function producedFiles(spec: CommandSpec, fetched: Fetched): ProducedFile[] {
  if (spec.commandType === 'YTDLP_COMMAND' && spec.ffmpegCommands.length === 0) {
    return Object.entries(fetched.downloads ?? {}).map(([alias, path]) => {
      const suffix = alias.replace(/^in_/, '')
      return { alias: `out_${suffix}`, filename: `${suffix}${extname(path)}`, path }
    })
  }
  return Object.entries(spec.outputFiles).map(([alias, filename]) => ({ alias, filename, path: outputPath(filename) }))
}
