/**
 * The run phase's checks of the work-dir files a command names by path
 * (contracts/ffmpeg-work-files.ts lists them): made right before each
 * command of a chain runs, since a chain's earlier commands write files the
 * later ones read. A folder entry that is not there ends the command
 * INVALID_COMMAND naming the path, instead of ffmpeg's "No such file"; a
 * subtitle file that is really a playlist, or a playlist or concat list
 * naming anything outside the work dir, ends it the same way before ffmpeg
 * opens a byte of it.
 */
import { lstat, open, readdir, readFile, realpath } from 'node:fs/promises'
import { dirname, join, sep } from 'node:path'
import { sequenceNameMatcher, type WorkFileCheck } from '../../../contracts/ffmpeg-work-files.js'
import {
  concatListProblem,
  hlsPlaylistProblem,
  MAX_LIST_BYTES,
  SUBTITLE_HEAD_BYTES,
  subtitleFileProblem,
} from '../../../contracts/work-file-content.js'
import { RunnerFailure } from '../failure.js'

/** Makes every check in order; throws RunnerFailure INVALID_COMMAND at the first that fails. */
export async function checkWorkFiles(workDir: string, checks: readonly WorkFileCheck[]): Promise<void> {
  for (const check of checks) await checkOne(workDir, check)
}

async function checkOne(workDir: string, check: WorkFileCheck): Promise<void> {
  const fail = (why: string): never => {
    throw new RunnerFailure('INVALID_COMMAND', `${check.argument}: ${check.path}: ${why}`)
  }
  if (check.kind === 'sequence') {
    const directory = join(workDir, dirname(check.path))
    const names = await readdir(directory).catch(() => fail('the folder has no such directory'))
    await assertInside(workDir, directory, fail)
    const matcher = sequenceNameMatcher(check.path)
    if (!names.some((name) => matcher.test(name))) fail('no file of the folder matches this numbered sequence')
    return
  }
  const path = join(workDir, check.path)
  const stats = await lstat(path).catch(() => fail(check.kind === 'directory' ? 'the folder has no such directory' : 'no such file in the work directory'))
  await assertInside(workDir, path, fail)
  if (check.kind === 'directory') {
    if (!stats.isDirectory()) fail('not a directory')
    return
  }
  if (!stats.isFile()) fail('not a regular file')
  switch (check.kind) {
    case 'file':
      return
    case 'subtitles': {
      const why = subtitleFileProblem(await readHead(path, SUBTITLE_HEAD_BYTES))
      if (why !== null) fail(why)
      return
    }
    case 'hls':
    case 'concat': {
      if (stats.size > MAX_LIST_BYTES) fail(`a list longer than ${MAX_LIST_BYTES} bytes is not read`)
      const text = await readFile(path, 'utf8')
      const why = check.kind === 'hls' ? hlsPlaylistProblem(text) : concatListProblem(text)
      if (why !== null) fail(why)
    }
  }
}

/** No path the policy accepted climbs out, but a symlinked directory could: the real path must stay inside. */
async function assertInside(workDir: string, path: string, fail: (why: string) => never): Promise<void> {
  const [root, real] = await Promise.all([realpath(workDir), realpath(path).catch(() => fail('no such file in the work directory'))])
  if (real !== root && !real.startsWith(root + sep)) fail('leads outside the work directory')
}

async function readHead(path: string, bytes: number): Promise<Buffer> {
  const handle = await open(path, 'r')
  try {
    const buffer = Buffer.alloc(bytes)
    const { bytesRead } = await handle.read(buffer, 0, bytes, 0)
    return buffer.subarray(0, bytesRead)
  } finally {
    await handle.close()
  }
}
