/**
 * The two ends of a pod's yt-dlp cookies (contracts/ytdlp-cookies.ts): the
 * upload container reads the mounted Secret and hands the text over on the
 * hand-over socket; the run process writes what it was handed in its own
 * memory-backed directory, for yt-dlp, before the fetch starts.
 */
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import type { Logger } from 'pino'
import type { CommandSpec } from '../../../contracts/command-spec.js'
import type { RunnerConfig } from '../config.js'

/**
 * What the upload process sends: the cookies.txt, '' when the account stored
 * none (the Secret is optional, so its file is absent), null when the command
 * is not one that takes cookies (nothing is sent).
 */
export async function podCookiesToHandOver(spec: CommandSpec, config: RunnerConfig): Promise<string | null> {
  if (spec.commandType !== 'YTDLP_COMMAND' || !config.ytdlpCookiesSource) return null
  return readFile(config.ytdlpCookiesSource, 'utf8').catch(() => '')
}

/**
 * Waits for the upload process's greeting and writes it as `cookies.txt` in
 * `dir`; null (yt-dlp without cookies) when there are none or none came in
 * `limitMs`: the upload process that never connects is lost anyway.
 */
export async function handedCookies(greeting: Promise<string | null>, dir: string, limitMs: number, log: Logger): Promise<string | null> {
  const abandon = new AbortController()
  const text = await Promise.race([greeting, sleep(limitMs, undefined, { signal: abandon.signal }).catch(() => undefined)])
  abandon.abort()
  if (text === undefined) log.warn({ limit_ms: limitMs }, 'no yt-dlp cookies were handed over in time: yt-dlp runs without them')
  if (!text) return null
  const file = join(dir, 'cookies.txt')
  await writeFile(file, text, { mode: 0o600 })
  return file
}
