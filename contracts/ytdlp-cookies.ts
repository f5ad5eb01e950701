/**
 * How an account's yt-dlp cookies reach yt-dlp, and nothing else. They are
 * never part of a CommandSpec or a MediaCommand, never in an environment
 * variable, argv or log line:
 *
 * - local mode: the executor writes the account's cookies.txt (0600) in a
 *   directory of its own under `<dataDir>/runner/ytdlp-cookies/<run>/`,
 *   outside every work directory, and names the file to the runner (a warm
 *   worker: in the job message; a fresh runner: FFKUBE_YTDLP_COOKIES_FILE).
 *   The runner binds that directory, and only it, into yt-dlp's jail, gives
 *   yt-dlp `--cookies FILE`, and empties the directory once the downloads
 *   are done, before the user's ffmpeg starts (whose jail never had it). The
 *   executor removes the directory again when the run ends, however it ends.
 *   yt-dlp writes its cookie jar back to FILE at exit: that is why the file
 *   sits outside the work directory, which is what outputs are read from.
 * - Kubernetes: the fetch and the user's ffmpeg run in one process of the
 *   `ffmpeg` container (ADR 0006), where a mounted Secret could never be
 *   removed. So the Secret is mounted in the `upload` container only, which
 *   hands the text over once, on the hand-over socket the run process listens
 *   on (runner-image/runner/hand-over.ts), before the fetch starts; the fetch
 *   writes it in a memory-backed emptyDir of the `ffmpeg` container (never the
 *   work volume) and empties it when the downloads end, as in local mode
 *   (docs/operations/ytdlp-cookies.md).
 */

/** The one-shot runner's variable naming the cookies.txt its yt-dlp downloads read. */
export const YTDLP_COOKIES_FILE_ENV = 'FFKUBE_YTDLP_COOKIES_FILE'

/**
 * In a pod (EXECUTOR=kubernetes) the API puts the account's cookies.txt in the
 * per-command Secret `ffkube-<command_id>-ytdlp-cookies` under this key; the
 * job builder mounts it, optional, in the upload container only.
 */
export const YTDLP_COOKIES_SECRET_KEY = 'cookies.txt'

export function ytdlpCookiesSecretName(commandId: string): string {
  return `ffkube-${commandId}-ytdlp-cookies`
}

/** The upload container's variable naming the mounted Secret file it hands to the run process (runner-image/runner/hand-over.ts). */
export const YTDLP_COOKIES_SOURCE_ENV = 'FFKUBE_YTDLP_COOKIES_SOURCE'

/** The ffmpeg container's variable naming the memory-backed directory, its own, where the fetch writes the cookies.txt yt-dlp reads. */
export const YTDLP_COOKIES_DIR_ENV = 'FFKUBE_YTDLP_COOKIES_DIR'
