/**
 * Which files a command delivers, decided from its spec, its plan and phase
 * 1's record only, never from what is in the work dir: its declared outputs,
 * or for a download-only YTDLP_COMMAND the downloads themselves. A declared
 * output that names a folder of files (contracts/output-patterns.ts) is
 * delivered as every regular file in `outputs/<alias>/` (output-folders.ts).
 * Phase 2 collects them before it probes; phase 3 collects them again before
 * it uploads, since it may be a later process in a work dir ffmpeg wrote to.
 */
import { lstat } from 'node:fs/promises'
import { extname, join, normalize } from 'node:path'
import { DEFAULT_MAX_OUTPUT_FILES, type CommandSpec } from '../../contracts/command-spec.js'
import { outputPath } from '../../contracts/ffmpeg-paths.js'
import { mainMember, outputFolder } from '../../contracts/output-patterns.js'
import { RunnerFailure } from './failure.js'
import { FileBudget, walkFolder, type FolderMember } from './output-folders.js'
import type { Fetched } from './phase-state.js'

export interface ProducedFile {
  alias: string
  filename: string
  /** Relative to the work dir: the file, or for a folder output its folder. */
  path: string
  /** A folder output's main file name or pattern (the plan's folders); null for a single file. */
  main: string | null
}

/** A produced file as found: a single file, or a folder output's files and its main one. */
export interface CollectedOutput {
  file: ProducedFile
  /** Null for a single file. */
  members: FolderMember[] | null
  /** The file probed and named in OutputFileResult.filename: the file itself, or the folder's main file. */
  mainPath: string
  /** Its name in the command's folder in the bucket: the filename, or its path relative to the alias's folder. */
  mainName: string
}

/** Pure. `folders`: the plan's folder outputs, alias → main file name or pattern. */
export function producedFiles(spec: CommandSpec, fetched: Fetched, folders: Readonly<Record<string, string>>): ProducedFile[] {
  if (spec.commandType === 'YTDLP_COMMAND' && spec.ffmpegCommands.length === 0) {
    return Object.entries(fetched.downloads ?? {}).map(([alias, path]) => {
      const suffix = alias.replace(/^in_/, '')
      return { alias: `out_${suffix}`, filename: `${suffix}${extname(path)}`, path, main: null }
    })
  }
  return Object.entries(spec.outputFiles).map(([alias, filename]) => {
    const main = Object.hasOwn(folders, alias) ? (folders[alias] as string) : null
    return { alias, filename, path: main === null ? outputPath(filename) : outputFolder(alias), main }
  })
}

/** The command's file-count cap (CommandLimits.maxOutputFiles). */
export function maxOutputFiles(spec: CommandSpec): number {
  return spec.limits?.maxOutputFiles ?? DEFAULT_MAX_OUTPUT_FILES
}

/** Only fetched or declared files are ever delivered: `inputs/…` (downloads) or `outputs/…`, never a path out of the work dir. */
const DELIVERABLE = /^(?:inputs|outputs)\/[^/]+$/

/**
 * Finds every file to deliver: each single file as a regular file where it
 * should be (OUTPUT_MISSING otherwise: a directory or a link in its place is
 * treated as missing), each folder output's regular files, all of them at
 * most `maxFiles` (OUTPUT_TOO_MANY_FILES).
 */
export async function collectOutputs(workDir: string, files: readonly ProducedFile[], maxFiles: number): Promise<CollectedOutput[]> {
  const budget = new FileBudget(maxFiles)
  const collected: CollectedOutput[] = []
  for (const file of files) {
    const path = normalize(file.path)
    if (!DELIVERABLE.test(path)) throw new RunnerFailure('INTERNAL_ERROR', `${file.alias} is not a deliverable path`)
    if (file.main !== null) {
      const members = await walkFolder(workDir, path, file.alias, budget)
      const mainName = mainMember(members.map((member) => member.relative), file.main) as string
      collected.push({ file, members, mainPath: `${path}/${mainName}`, mainName })
      continue
    }
    budget.take(1)
    let regular = false
    try {
      regular = (await lstat(join(workDir, path))).isFile()
    } catch {
      // Absent: reported below.
    }
    if (!regular) throw new RunnerFailure('OUTPUT_MISSING', `no command wrote ${file.alias} (${file.filename})`)
    collected.push({ file, members: null, mainPath: path, mainName: file.filename })
  }
  return collected
}
