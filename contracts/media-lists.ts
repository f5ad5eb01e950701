/**
 * The file-read CVE class, checked on the runner's side: a playlist or a
 * concat list inside a zip folder makes a demuxer open what the command
 * string never named (`/etc/passwd`, `file:…`, `concat:…|…`, `http://…`).
 * FFmpeg picks a demuxer by content, not by name (`#EXTM3U` at the start of
 * `clip.mp4` opens the HLS demuxer; `-f concat` reads any file as a list), so
 * every text file of the folder is read as each kind it could be, and every
 * entry it names must be a plain relative path inside the folder. Pure; the
 * fetch phase reads the files (runner-image/runner/fetch/compressed-folder.ts).
 * The run phase reads lists a command names with the same parsers and a
 * stricter rule for entries (work-file-content.ts). The ffmpeg side forces
 * `-protocol_whitelist file` and `-safe 1` as well (ffmpeg-policy.ts).
 */
import { localName, readMpd, URL_TEXT_ELEMENTS } from './dash-manifest.js'
import { PLAIN_FILENAME } from './ffmpeg-paths.js'

/** One entry a list names that may not be opened, and where. */
export interface PlaylistProblem {
  /** 1-based line of the file. */
  line: number
  entry: string
  reason: string
  /** A concat list's `option` line, refused whatever it sets. */
  option?: true
}

/** Why an entry may not be opened, or null: listedPathProblem, or a stricter rule of the caller's. */
export type EntryRule = (entry: string) => string | null

/** Why `path` (an entry of a playlist or list) is not a relative path inside the folder, or null. */
export function listedPathProblem(path: string): string | null {
  if (path === '') return 'is empty'
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(path)) return 'has a control character'
  // Any colon: `file:`, `concat:`, `http:`, `subfile:`, a drive letter; FFmpeg reads a protocol before the first one.
  if (path.includes(':')) return 'names a protocol or URL (only relative paths inside the folder may be listed)'
  if (path.includes('\\')) return 'has a backslash'
  if (path.startsWith('/') || path.startsWith('~')) return 'is an absolute path'
  if (path.includes('|')) return 'has a "|" (concat protocol syntax)'
  if (/%(2e|2f|5c)/i.test(path) || /&#/.test(path)) return 'has an encoded dot or slash'
  const segments = path.split(/[?#]/, 1)[0]!.split('/')
  if (segments.includes('..')) return 'leaves the folder with ".."'
  if (segments.some((segment) => segment.startsWith('.') && segment !== '.')) return 'names a hidden path (a segment starting with ".")'
  return null
}

/** Whether the text opens an HLS playlist, as FFmpeg's probe sees it. */
export function isHlsPlaylist(text: string): boolean {
  return /^\uFEFF?\s*#EXTM3U/.test(text)
}

/**
 * Whether the text may hold a DASH manifest: an MPD tag anywhere (libxml2
 * parses the whole file, so the root may come after a long prologue), its
 * name in any case, as the demuxer compares it.
 */
export function isDashManifest(text: string): boolean {
  return /<(?:[A-Za-z0-9_.-]+:)?MPD[\s>/]/i.test(text)
}

/** FFmpeg's HLS line buffer (MAX_URL_SIZE) less margin: a longer line is cut there, and the cut could make a new path. */
export const MAX_HLS_LINE = 4000

/** One line's URIs of an HLS playlist, or the line itself when it is too long to be read as ffmpeg does. */
export interface HlsLine {
  /** 1-based. */
  line: number
  entries: string[]
  tooLong: string | null
}

/**
 * Every URI an HLS playlist opens, line by line: its URI lines and the
 * URI="…" attributes of its tags. Lines end at CR, LF or NUL, as ff_get_line
 * reads them.
 */
export function hlsLines(text: string): HlsLine[] {
  const lines: HlsLine[] = []
  text.split(/\r\n|[\r\n\0]/).forEach((raw, index) => {
    const line = raw.replace(/^\uFEFF/, '').trim()
    if (line === '') return
    if (line.length > MAX_HLS_LINE) {
      lines.push({ line: index + 1, entries: [], tooLong: `${line.slice(0, 40)}…` })
      return
    }
    const entries = line.startsWith('#') ? [...line.matchAll(/URI\s*=\s*"([^"]*)"|URI\s*=\s*([^,\s]+)/gi)].map((m) => m[1] ?? m[2] ?? '') : [line]
    lines.push({ line: index + 1, entries, tooLong: null })
  })
  return lines
}

/** Every URI an HLS playlist opens that `rule` refuses, and every line too long to check. */
export function hlsProblems(text: string, rule: EntryRule = listedPathProblem): PlaylistProblem[] {
  return hlsLines(text).flatMap(({ line, entries, tooLong }): PlaylistProblem[] => {
    if (tooLong !== null) return [{ line, entry: tooLong, reason: `is longer than ${MAX_HLS_LINE} characters` }]
    return entries.flatMap((entry) => {
      const reason = rule(entry)
      return reason ? [{ line, entry, reason }] : []
    })
  })
}

/**
 * Template identifiers FFmpeg fills in a segment URL (dashdec.c, dash.c; case
 * ignored as av_strireplace does): numbers, or a Representation's id and
 * bandwidth, which dashProblems checks themselves.
 */
const DASH_TEMPLATE = /\$(?:RepresentationID|Number|Bandwidth|Time)(?:%0\d{1,2}d)?\$/gi
/** Attributes whose value is a URL (xmlGetProp of SegmentTemplate, SegmentURL, Initialization; href and index refused as strictly). */
const DASH_URL_ATTRIBUTES: ReadonlySet<string> = new Set(['media', 'initialization', 'sourceurl', 'href', 'index'])

/**
 * Every URL a DASH manifest names that `rule` refuses, read as libxml2 reads
 * it (dash-manifest.ts: a manifest outside the subset it reads is one
 * problem), with each template identifier as a plain letter. A BaseURL may
 * end in "/" (a directory). A Representation's id and bandwidth become part
 * of the paths its templates make, so they must be plain names.
 */
export function dashProblems(text: string, rule: EntryRule = listedPathProblem): PlaylistProblem[] {
  const reading = readMpd(text)
  if (!reading.ok) return [{ line: reading.line, entry: '', reason: reading.reason }]
  const problems: PlaylistProblem[] = []
  const judge = (line: number, entry: string, path: string): void => {
    const reason = rule(path)
    if (reason) problems.push({ line, entry, reason })
  }
  for (const { name, line, attributes, text: url } of reading.elements) {
    const element = localName(name)
    if (URL_TEXT_ELEMENTS.has(element) && url !== '') {
      const path = url.replace(DASH_TEMPLATE, 'x')
      judge(line, url, path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path)
    }
    for (const { name: attributeName, value } of attributes) {
      const attribute = localName(attributeName)
      if (DASH_URL_ATTRIBUTES.has(attribute)) judge(line, value, value.replace(DASH_TEMPLATE, 'x'))
      if (element === 'representation' && (attribute === 'id' || attribute === 'bandwidth') && !PLAIN_FILENAME.test(value)) {
        problems.push({ line, entry: value, reason: `is a Representation ${attribute}, which FFmpeg puts into segment paths: letters, digits, _ . - only, not starting with . or -` })
      }
    }
  }
  return problems
}

/** The concat demuxer's directives (concatdec.c `syntax[]`); any other keyword ends its parse with an error. */
const CONCAT_DIRECTIVES = new Set(['ffconcat', 'file', 'duration', 'inpoint', 'outpoint', 'file_packet_meta', 'file_packet_metadata', 'option', 'stream', 'exact_stream_id', 'stream_meta', 'stream_codec', 'stream_extradata', 'chapter'])

/**
 * The `file` and `option` directives of text read as an FFmpeg concat list
 * (any file may be: `-f concat -i notes.txt`), read as concatdec.c reads
 * them: line by line, a line's text ending at a NUL, blank and `#` lines
 * skipped, and the first unknown keyword ending the parse (FFmpeg fails
 * there, so nothing after it is ever opened, and a media file is judged by
 * its first line only). A path is unquoted as av_get_token does.
 */
export function concatProblems(text: string, rule: EntryRule = listedPathProblem): PlaylistProblem[] {
  return scanConcat(text, rule).problems
}

/** concatProblems, and the unknown keyword (and its line) where the parse stopped before the end of `text`, if it did. */
export function scanConcat(text: string, rule: EntryRule = listedPathProblem): { problems: PlaylistProblem[]; stopped: { line: number; keyword: string } | null } {
  const problems: PlaylistProblem[] = []
  const lines = text.split(/\r\n|[\r\n]/)
  for (const [index, raw] of lines.entries()) {
    const line = (raw.split('\0', 1)[0] as string).replace(/^\uFEFF/, '')
    const match = /^[ \t]*([^ \t]*)[ \t]*(.*)$/.exec(line) as RegExpExecArray
    const keyword = match[1] as string
    const rest = (match[2] as string).trim()
    if (keyword === '' || keyword.startsWith('#')) continue
    if (!CONCAT_DIRECTIVES.has(keyword)) return { problems, stopped: { line: index + 1, keyword } }
    if (keyword === 'option') {
      // Demuxer options for the listed file (protocol_whitelist and the like) would undo the ffmpeg side's hardening; -safe 1 refuses them too.
      problems.push({ line: index + 1, entry: rest, reason: 'sets demuxer options; concat lists in a folder may not use "option"', option: true })
    } else if (keyword === 'file') {
      const entry = unquoteToken(rest)
      const reason = rule(entry)
      if (reason) problems.push({ line: index + 1, entry, reason })
    }
  }
  return { problems, stopped: null }
}

/** av_get_token's reading of one token: single quotes group, a backslash escapes the next character, whitespace ends it. */
export function unquoteToken(raw: string): string {
  let out = ''
  let quoted = false
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i] as string
    if (!quoted && c === '\\' && i + 1 < raw.length) {
      out += raw[++i]
    } else if (c === "'") {
      quoted = !quoted
    } else if (!quoted && /\s/.test(c)) {
      break
    } else {
      out += c
    }
  }
  return out
}

/** Every problem of a text file, read as each kind of list it could be. */
export function listProblems(text: string): PlaylistProblem[] {
  const problems = concatProblems(text)
  if (isHlsPlaylist(text)) problems.push(...hlsProblems(text))
  if (isDashManifest(text)) problems.push(...dashProblems(text))
  return problems
}
