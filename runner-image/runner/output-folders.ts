/**
 * The files of a multi-file output: everything ffmpeg wrote into its folder
 * `outputs/<alias>/` (contracts/output-patterns.ts). The folder is walked,
 * never trusted: only regular files are delivered, and a link, a device, a
 * FIFO or a socket there fails the command, since ffmpeg has no reason to
 * make one and reading through it could reach outside the work dir.
 */
import { lstat, readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { compareNames } from '../../contracts/output-patterns.js'
import { RunnerFailure } from './failure.js'

/** One file of a folder output. */
export interface FolderMember {
  /** Relative to the alias's folder, '/'-separated: the name it is stored under in the command's folder. */
  relative: string
  /** Relative to the work dir. */
  path: string
  sizeBytes: number
}

/** Counts the files a command's outputs hold, across its folders; fails once there are more than `max`. */
export class FileBudget {
  private used = 0
  constructor(readonly max: number) {}

  take(count: number): void {
    this.used += count
    if (this.used > this.max) throw tooManyFiles(this.max)
  }
}

export function tooManyFiles(max: number): RunnerFailure {
  return new RunnerFailure('OUTPUT_TOO_MANY_FILES', `the outputs hold more than ${max} files, the most this command may write; nothing was stored`)
}

// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f\\]/

/**
 * Every regular file under `folder` (work-dir relative), in no particular
 * order. An absent or empty folder is OUTPUT_MISSING; the folder itself must
 * be a real directory, not a link to one.
 */
export async function walkFolder(workDir: string, folder: string, alias: string, budget: FileBudget): Promise<FolderMember[]> {
  const top = await lstat(join(workDir, folder)).catch(() => null)
  if (!top?.isDirectory()) throw new RunnerFailure('OUTPUT_MISSING', `no command wrote ${alias}`)
  const members: FolderMember[] = []
  const pending = ['']
  for (let relativeDir = pending.pop(); relativeDir !== undefined; relativeDir = pending.pop()) {
    const entries = await readdir(join(workDir, folder, relativeDir), { withFileTypes: true })
    budget.take(entries.filter((entry) => !entry.isDirectory()).length)
    for (const entry of entries) {
      const relative = relativeDir === '' ? entry.name : `${relativeDir}/${entry.name}`
      if (CONTROL.test(entry.name)) throw new RunnerFailure('OUTPUT_NOT_REGULAR_FILE', `${alias}: a file name holds a control character or a backslash`)
      if (entry.isDirectory()) pending.push(relative)
      else if (!entry.isFile()) throw new RunnerFailure('OUTPUT_NOT_REGULAR_FILE', `${alias}: ${relative} is not a regular file (a link or a special file); nothing was stored`)
      else members.push({ relative, path: `${folder}/${relative}`, sizeBytes: 0 })
    }
  }
  if (members.length === 0) throw new RunnerFailure('OUTPUT_MISSING', `no command wrote a file of ${alias}`)
  // Sizes from lstat, which does not follow a link swapped in since readdir; 64 at a time.
  for (let index = 0; index < members.length; index += 64) {
    await Promise.all(
      members.slice(index, index + 64).map(async (member) => {
        const stats = await lstat(join(workDir, member.path))
        if (!stats.isFile()) throw new RunnerFailure('OUTPUT_NOT_REGULAR_FILE', `${alias}: ${member.relative} is not a regular file; nothing was stored`)
        member.sizeBytes = stats.size
      }),
    )
  }
  return members.sort((a, b) => compareNames(a.relative, b.relative))
}
