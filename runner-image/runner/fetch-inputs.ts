/**
 * Step 1 of an FFmpeg command: the runner (never ffmpeg) fetches every input
 * into `inputs/`, through the URL guard.
 */
import { mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import { inputPathsFor } from '../../contracts/ffmpeg-paths.js'
import { guardedDownload, UrlGuardError, type GuardedFetchOptions } from '../../contracts/url-guard-fetch.js'
import type { RunnerErrorStatus } from '../../contracts/status-events.js'
import { RunnerFailure } from './failure.js'

/** Fetches all inputs in parallel; returns alias → work-dir path. */
export async function fetchInputs(
  workDir: string,
  inputFiles: Record<string, string>,
  options: GuardedFetchOptions,
): Promise<Record<string, string>> {
  const paths = inputPathsFor(inputFiles)
  await mkdir(join(workDir, 'inputs'), { recursive: true })
  const downloads = Object.entries(inputFiles).map(async ([alias, url]) => {
    try {
      await guardedDownload(url, join(workDir, paths[alias] as string), options)
    } catch (error) {
      throw inputFailure(alias, error)
    }
  })
  // The first failure decides the command; the rest still settle before the work dir is removed.
  const results = await Promise.allSettled(downloads)
  const failed = results.find((result): result is PromiseRejectedResult => result.status === 'rejected')
  if (failed) throw failed.reason
  return paths
}

/** Maps a fetch failure to the command's error_status (INPUT_*), naming the alias. */
export function inputFailure(alias: string, error: unknown): RunnerFailure {
  if (error instanceof UrlGuardError) {
    return new RunnerFailure(`INPUT_${error.code}` as RunnerErrorStatus, `input ${alias}: ${error.message}`)
  }
  return new RunnerFailure('INPUT_UNREACHABLE', `input ${alias}: ${error instanceof Error ? error.message : String(error)}`)
}
