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
 * - Kubernetes: not built yet (docs/operations/ytdlp-cookies.md says what it
 *   needs); a pod's yt-dlp runs without cookies.
 */

/** The one-shot runner's variable naming the cookies.txt its yt-dlp downloads read. */
export const YTDLP_COOKIES_FILE_ENV = 'FFKUBE_YTDLP_COOKIES_FILE'
