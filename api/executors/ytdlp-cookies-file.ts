/**
 * Local mode writes an account's cookies.txt for one yt-dlp run in a
 * directory of its own, `<dataDir>/runner/ytdlp-cookies/<run id>/`: outside
 * every work directory, so no output can be read from it, and alone, so the
 * runner can bind just it into yt-dlp's jail (contracts/ytdlp-cookies.ts).
 */
import { mkdir, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'

/** Every run's cookie directory is under this one. */
function ytdlpCookiesRoot(dataDir: string): string {
  return join(dataDir, 'runner', 'ytdlp-cookies')
}

/** The run's cookie directory; the run id is reduced to what cannot climb out of it. */
export function ytdlpCookiesDir(dataDir: string, runId: string): string {
  return join(ytdlpCookiesRoot(dataDir), runId.replace(/[^0-9a-f-]/g, '_'))
}

/** Writes the cookies (0600, in a 0700 directory) and returns the file's path. */
export async function writeYtdlpCookies(dataDir: string, runId: string, cookiesTxt: string): Promise<string> {
  const dir = ytdlpCookiesDir(dataDir, runId)
  await mkdir(dir, { recursive: true, mode: 0o700 })
  const file = join(dir, 'cookies.txt')
  await writeFile(file, cookiesTxt, { mode: 0o600 })
  return file
}

/** Removes the run's cookie directory, if it had one: the runner emptied it already unless it died first. */
export async function removeYtdlpCookies(dataDir: string, runId: string): Promise<void> {
  await rm(ytdlpCookiesDir(dataDir, runId), { recursive: true, force: true })
}

/**
 * Removes what a previous start of the service left (it was killed during a
 * download): called before this start's first run, so no run of it is removed.
 */
export async function removeLeftoverYtdlpCookies(dataDir: string): Promise<void> {
  await rm(ytdlpCookiesRoot(dataDir), { recursive: true, force: true })
}
