/**
 * Where files live in a command's work directory, and which words of a command
 * string name them. Every path is relative to the work directory, which is
 * ffmpeg's cwd: `inputs/<alias><ext>` for fetched inputs, `outputs/<filename>`
 * for declared outputs, `<filename>` for a chain's intermediate files.
 *
 * Placeholder parsing here is the policy's own; contracts/placeholders.ts (the
 * API's submit-time alias checks) may replace it once both exist.
 */

/**
 * A plain filename in the work directory: no `/`, no `:` (ffmpeg would read a
 * protocol), no `%` (image2 patterns), no leading `-` or `.` (options, `..`).
 */
export const PLAIN_FILENAME = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/

const WHOLE_PLACEHOLDER = /^(?:\{\{\s*([A-Za-z0-9_]+)\s*\}\}|<<\s*([A-Za-z0-9_]+)\s*>>)$/
const ANY_PLACEHOLDER = /\{\{[^}]*\}\}|<<[^>]*>>/

/** The alias a word consists of (`{{in_a}}`, `<<in_a>>`), or null. */
export function placeholderAlias(word: string): string | null {
  const match = WHOLE_PLACEHOLDER.exec(word)
  return match ? ((match[1] ?? match[2]) as string) : null
}

/** True when a word contains a placeholder somewhere other than as the whole word. */
export function hasEmbeddedPlaceholder(word: string): boolean {
  return placeholderAlias(word) === null && ANY_PLACEHOLDER.test(word)
}

/** The extension a fetched input keeps, from its URL path (`.mp4`), or ''. */
export function inputExtension(url: string): string {
  let pathname: string
  try {
    pathname = new URL(url).pathname
  } catch {
    return ''
  }
  const match = /\.([A-Za-z0-9]{1,5})$/.exec(pathname)
  return match ? `.${(match[1] as string).toLowerCase()}` : ''
}

/** Work-dir path of a fetched input. */
export function inputPath(alias: string, extension: string): string {
  return `inputs/${alias}${extension}`
}

/** Work-dir path of a declared output. */
export function outputPath(filename: string): string {
  return `outputs/${filename}`
}

/** Input alias → work-dir path, for inputs fetched from these URLs. */
export function inputPathsFor(inputFiles: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(inputFiles).map(([alias, url]) => [alias, inputPath(alias, inputExtension(url))]))
}

/**
 * Input alias → work-dir path for yt-dlp downloads, before they exist: the
 * extension is only known after the download, and the policy does not need it.
 * The API uses this to check a run-ytdlp-command's ffmpeg_command at submit time.
 */
export function pendingDownloadPaths(aliases: Iterable<string>): Record<string, string> {
  return Object.fromEntries([...aliases].map((alias) => [alias, `inputs/${alias}`]))
}

/** Why a word is not a plain filename, in words a user can act on; null when it is one. */
export function describeBadFilename(word: string): string | null {
  if (PLAIN_FILENAME.test(word) && word !== '.' && word !== '..') return null
  if (/^[A-Za-z][A-Za-z0-9+.-]*:/.test(word)) return 'protocols and URLs are not allowed'
  if (word.startsWith('/')) return 'absolute paths are not allowed'
  if (word.split('/').includes('..')) return 'paths leaving the work directory are not allowed'
  if (word.includes('/')) return 'paths are not allowed, only plain filenames'
  if (word.includes('%')) return 'filename patterns (%d, %03d, %v) are allowed only in output_files filenames'
  if (word === '-') return 'standard input and output are not allowed'
  return 'a filename may use only letters, digits, _ . and -, must not start with . or -, and has at most 128 characters'
}
