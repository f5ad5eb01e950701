/**
 * Files of the work directory a command names by path rather than by alias:
 * what an earlier command of a chain wrote and, when the command brings an
 * input_compressed_folder, the entries unpacked from its zip. Those entries
 * exist only at run time, so the policy holds each such path to a safe shape
 * here and lists it as a WorkFileCheck, which the runner makes before ffmpeg
 * starts (runner-image/runner/run/work-file-checks.ts). Files whose bytes
 * decide what ffmpeg opens next (a subtitle file, a playlist, a DASH manifest, a concat list)
 * get a check of their content too, whatever their origin.
 */
import { describeBadFilename, PLAIN_FILENAME, placeholderAlias } from './ffmpeg-paths.js'
import type { PolicyViolationCode } from './ffmpeg-policy.js'
import { refuse } from './policy-refusal.js'

/** What the runner checks about one work-dir path before the command runs. */
export type WorkFileCheckKind =
  /** A folder entry: a regular file must be there. */
  | 'file'
  /** A folder entry directory (a fontsdir). */
  | 'directory'
  /** An image2 pattern: at least one file of the folder must match it. */
  | 'sequence'
  /** Read by the subtitles filter's own demuxer: must be a subtitle file, not a playlist. */
  | 'subtitles'
  /** An HLS playlist: every entry must be a relative path inside the work dir. */
  | 'hls'
  /** A DASH manifest: every URL it names must be a relative path inside the work dir. */
  | 'dash'
  /** A concat list: every entry must be a relative path inside the work dir, no `option`. */
  | 'concat'

export interface WorkFileCheck {
  kind: WorkFileCheckKind
  /** Relative to the work dir. */
  path: string
  /** The argument as the user wrote it (`-i frames/a.png`, `subtitles filename`), for the runner's message. */
  argument: string
}

/** What the command needs to know about its files (a part of PolicyContext). */
export interface WorkFileContext {
  inputs: Record<string, string>
  outputs: Record<string, string>
  written?: ReadonlyMap<string, string>
  folder?: boolean
}

/** A work-dir file an argument names. */
export interface ResolvedWorkFile {
  path: string
  /** True when it is a folder entry the policy could not see (the runner checks it). */
  fromFolder: boolean
}

/** Top-level directories that hold the service's own files, never a folder's entries. */
const RESERVED_TOP = new Set(['inputs', 'outputs'])
const MAX_FOLDER_PATH = 1024
const MAX_FOLDER_DEPTH = 32

/**
 * Why `path` cannot name an entry of the command's folder; null when it can.
 * Each `/`-separated part is held to PLAIN_FILENAME (no `..`, no leading `.`
 * or `-`, no `:` or `%`), so the path stays inside the work dir and reads as a
 * file to every part of ffmpeg.
 */
export function folderPathProblem(path: string): string | null {
  if (/^[A-Za-z][A-Za-z0-9+.-]*:/.test(path)) return 'protocols and URLs are not allowed'
  if (path.startsWith('/')) return 'absolute paths are not allowed'
  const segments = path.split('/')
  if (segments.includes('..')) return 'paths leaving the work directory are not allowed'
  if (path.length > MAX_FOLDER_PATH || segments.length > MAX_FOLDER_DEPTH) {
    return `a folder path has at most ${MAX_FOLDER_DEPTH} parts and ${MAX_FOLDER_PATH} characters`
  }
  const top = segments[0] as string
  if (RESERVED_TOP.has(top)) return `${top}/ holds the service's own files, not the folder's; name an input as {{in_alias}}`
  const bad = segments.find((segment) => !PLAIN_FILENAME.test(segment))
  if (bad !== undefined) {
    return `"${bad}": each part of a folder path may use only letters, digits, _ . and -, must not be empty or start with . or -`
  }
  return null
}

/** `%d` or `%0Nd`: the one number of an image2 sequence pattern. */
const SEQUENCE_NUMBER = /%(?:0([1-9]))?d/

/** Why `path` is not an image2 sequence of folder entries (`frames/img_%03d.png`); null when it is one. */
export function sequenceProblem(path: string): string | null {
  const last = path.split('/').pop() as string
  if ((path.match(/%/g) ?? []).length !== 1 || !SEQUENCE_NUMBER.test(last)) {
    return 'a numbered sequence has exactly one %d or %0Nd (N from 1 to 9), in the last part of the path'
  }
  return folderPathProblem(path.replace(SEQUENCE_NUMBER, '0'))
}

/** The names (last path part) a sequence pattern matches, as image2's `sequence` pattern type reads them. */
export function sequenceNameMatcher(pattern: string): RegExp {
  const last = pattern.split('/').pop() as string
  const match = SEQUENCE_NUMBER.exec(last)
  if (!match) throw new Error(`not a sequence pattern: ${pattern}`)
  const escape = (text: string): string => text.replace(/[.*+?^${}()|[\]\\-]/g, '\\$&')
  const digits = match[1] === undefined ? '\\d+' : `\\d{${match[1]},}`
  return new RegExp(`^${escape(last.slice(0, match.index))}${digits}${escape(last.slice(match.index + match[0].length))}$`)
}

/**
 * The work-dir file a value names: an input alias, a file an earlier command
 * wrote, or (with a folder) a folder entry. `argument` starts every message
 * (`-i`, `subtitles filename`); `code` is the violation a bad path gets.
 */
export function resolveWorkFile(value: string, context: WorkFileContext, argument: string, code: PolicyViolationCode): ResolvedWorkFile {
  const alias = placeholderAlias(value)
  const written = context.written ?? new Map<string, string>()
  if (alias !== null) {
    const path = context.inputs[alias] ?? written.get(alias)
    if (path !== undefined) return { path, fromFolder: false }
    if (alias in context.outputs) refuse('INPUT_NOT_ALLOWED', `${argument} ${value}: output ${alias} is read before an earlier command wrote it`)
    refuse('UNKNOWN_PLACEHOLDER', `${argument} ${value}: ${alias} is not a declared input`)
  }
  const earlier = written.get(value)
  if (earlier !== undefined) return { path: earlier, fromFolder: false }
  if (context.folder) {
    const why = folderPathProblem(value)
    if (why !== null) refuse(code, `${argument} ${value}: ${why}`)
    return { path: value, fromFolder: true }
  }
  const why = describeBadFilename(value)
  if (why !== null) refuse(code, `${argument} ${value}: ${why}; name an input as {{in_alias}}`)
  refuse(code, `${argument} ${value}: no earlier command wrote this file; name an input as {{in_alias}}`)
}
