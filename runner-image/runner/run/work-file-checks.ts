/**
 * The run phase's checks of the work-dir files a command names by path
 * (contracts/ffmpeg-work-files.ts lists them): made right before each
 * command of a chain runs, since a chain's earlier commands write files the
 * later ones read. A folder entry that is not there ends the command
 * INVALID_COMMAND naming the path, instead of ffmpeg's "No such file"; a
 * subtitle file that is really a playlist, or a playlist, DASH manifest or
 * concat list naming anything outside the work dir, ends it the same way before ffmpeg
 * opens a byte of it.
 */
import { lstat, readdir, readFile, realpath } from 'node:fs/promises'
import { dirname, join, sep } from 'node:path'
import { sequenceNameMatcher, type WorkFileCheck } from '../../../contracts/ffmpeg-work-files.js'
import {
  concatListProblem,
  dashManifestProblem,
  hlsNestedPlaylists,
  hlsPlaylistProblem,
  MAX_LIST_BYTES,
  SUBTITLE_HEAD_BYTES,
  subtitleFileProblem,
} from '../../../contracts/work-file-content.js'
import { RunnerFailure } from '../failure.js'
import { readHead } from '../file-head.js'

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
      return checkPlaylists(workDir, check, fail)
    case 'dash': {
      // A manifest names no further manifest FFmpeg follows (no xlink, no Location): one file is read.
      if (stats.size > MAX_LIST_BYTES) fail(`a manifest longer than ${MAX_LIST_BYTES} bytes is not read`)
      const why = dashManifestProblem(await readFile(path, 'latin1'))
      if (why !== null) fail(why)
      return
    }
    case 'concat': {
      // Nested files open under the concat demuxer's own -safe 1 (its default), so one level is read here.
      if (stats.size > MAX_LIST_BYTES) fail(`a list longer than ${MAX_LIST_BYTES} bytes is not read`)
      const why = concatListProblem(await readFile(path, 'utf8'))
      if (why !== null) fail(why)
    }
  }
}

/** Most playlists one HLS input may lead to (a master, its variants and renditions). */
const MAX_PLAYLISTS = 64

/**
 * An HLS playlist and every playlist it names (variants, renditions), each of
 * which ffmpeg's HLS demuxer opens and follows with no rule of its own about
 * where an entry may point. A named playlist that is not there is left to
 * ffmpeg (it fails to open it).
 */
async function checkPlaylists(workDir: string, check: WorkFileCheck, fail: (why: string) => never): Promise<void> {
  const queue = [check.path]
  const seen = new Set(queue)
  for (let playlist = queue.shift(); playlist !== undefined; playlist = queue.shift()) {
    const path = join(workDir, playlist)
    const stats = await lstat(path).catch(() => null)
    if (stats === null || !stats.isFile()) continue
    await assertInside(workDir, path, fail)
    const where = playlist === check.path ? '' : `${playlist}: `
    if (stats.size > MAX_LIST_BYTES) fail(`${where}a playlist longer than ${MAX_LIST_BYTES} bytes is not read`)
    const text = await readFile(path, 'utf8')
    const why = hlsPlaylistProblem(text)
    if (why !== null) fail(where + why)
    for (const nested of hlsNestedPlaylists(text).map((uri) => join(dirname(playlist), uri))) {
      if (seen.has(nested)) continue
      if (seen.size >= MAX_PLAYLISTS) fail(`it leads to more than ${MAX_PLAYLISTS} playlists`)
      seen.add(nested)
      queue.push(nested)
    }
  }
}

/** No path the policy accepted climbs out, but a symlinked directory could: the real path must stay inside. */
async function assertInside(workDir: string, path: string, fail: (why: string) => never): Promise<void> {
  const [root, real] = await Promise.all([realpath(workDir), realpath(path).catch(() => fail('no such file in the work directory'))])
  if (real !== root && !real.startsWith(root + sep)) fail('leads outside the work directory')
}

