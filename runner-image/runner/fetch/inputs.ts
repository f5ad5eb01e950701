/**
 * Phase 1 (fetch) of an FFmpeg command: the runner (never ffmpeg) fetches
 * every input into `inputs/`, through the URL guard; the service's own
 * storage_urls are read from the managed storage endpoint instead (see
 * isManagedStorageUrl).
 */
import { mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import { inputPathsFor } from '../../../contracts/ffmpeg-paths.js'
import { guardedDownload, UrlGuardError, type GuardedFetchOptions } from '../../../contracts/url-guard-fetch.js'
import type { RunnerErrorStatus } from '../../../contracts/status-events.js'
import type { RunnerConfig } from '../config.js'
import { RunnerFailure } from '../failure.js'

/** The managed bucket as the runner is configured with it; the inputs the API verified as its own storage_urls. */
export interface ManagedInputs {
  storage: Pick<RunnerConfig['storage'], 'endpoint' | 'bucket' | 'forcePathStyle'>
  aliases: readonly string[]
}

/**
 * Whether `raw` is an object URL of the managed bucket at the endpoint this
 * runner is configured with: the one place an input may be read from without
 * the private-network guard, since the managed store may sit on loopback or
 * a private network. No endpoint means AWS S3, public, so the guard lets
 * it through anyway.
 */
export function isManagedStorageUrl(raw: string, storage: ManagedInputs['storage']): boolean {
  if (!storage.endpoint) return false
  let url: URL
  let endpoint: URL
  try {
    url = new URL(raw)
    endpoint = new URL(storage.endpoint)
  } catch {
    return false
  }
  // Our storage_urls carry none; one with user info is someone else's making.
  if (url.username !== '' || url.password !== '') return false
  if (storage.forcePathStyle) {
    return url.origin === endpoint.origin && url.pathname.startsWith(`${endpoint.pathname.replace(/\/+$/, '')}/${storage.bucket}/`)
  }
  return url.protocol === endpoint.protocol && url.port === endpoint.port && url.hostname === `${storage.bucket}.${endpoint.hostname}`
}

/** Fetches all inputs in parallel; returns alias → work-dir path. */
export async function fetchInputs(
  workDir: string,
  inputFiles: Record<string, string>,
  options: GuardedFetchOptions,
  managed: ManagedInputs | null = null,
): Promise<Record<string, string>> {
  const paths = inputPathsFor(inputFiles)
  await mkdir(join(workDir, 'inputs'), { recursive: true })
  const downloads = Object.entries(inputFiles).map(async ([alias, url]) => {
    // A presigned GET: S3 itself checks its signature and expiry, so no credential is needed here. Never redirected.
    const own = managed !== null && managed.aliases.includes(alias) && isManagedStorageUrl(url, managed.storage)
    try {
      await guardedDownload(url, join(workDir, paths[alias] as string), own ? { ...options, allowPrivateNetworks: true, maxRedirects: 0 } : options)
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
