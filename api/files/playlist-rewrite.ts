/**
 * Playlists rewritten so they play from a bucket without credentials. A
 * presigned URL signs one object key, so a playlist stored beside its
 * segments, which names them relatively (`seg_001.ts`, `v0/prog.m3u8`),
 * plays only where those names resolve to fetchable URLs. These functions
 * replace each entry that names a file of the same output with a URL for
 * it, and leave every other byte as it was: an absolute URL, a name outside
 * the output or one it does not hold are kept (the player reports them).
 * Pure: the caller says which URL each file gets (api/files/playback.ts).
 */
import { posix } from 'node:path'

/** A file of the output, by its path relative to the output's folder: the URL that replaces a reference to it, or null for one that is not a member. */
export type MemberUrl = (filename: string) => string | null

/** The kinds of playlist this module rewrites, by the file's extension. */
export type PlaylistKind = 'hls' | 'dash'

/** The playlist kind of a filename, or null for any other file. */
export function playlistKind(filename: string): PlaylistKind | null {
  const lower = filename.toLowerCase()
  if (lower.endsWith('.m3u8') || lower.endsWith('.m3u')) return 'hls'
  if (lower.endsWith('.mpd')) return 'dash'
  return null
}

/**
 * The member a reference inside the playlist at `playlistPath` names, as a
 * path relative to the output's folder; null for an absolute URL, a rooted
 * path, or one that leaves the folder.
 */
export function resolveReference(playlistPath: string, reference: string): string | null {
  if (reference === '' || /^[A-Za-z][A-Za-z0-9+.-]*:/.test(reference) || reference.startsWith('/')) return null
  // Names are written unescaped by FFmpeg; a query or fragment would not be part of a file's name.
  if (/[?#]/.test(reference)) return null
  const resolved = posix.normalize(posix.join(posix.dirname(playlistPath), reference))
  return resolved === '..' || resolved.startsWith('../') || resolved.startsWith('/') ? null : resolved
}

/** `URI="…"` attributes of HLS tags: EXT-X-MAP, EXT-X-MEDIA, EXT-X-I-FRAME-STREAM-INF, EXT-X-PART, EXT-X-PRELOAD-HINT… */
const URI_ATTRIBUTE = /(\bURI=")([^"]*)(")/g

/**
 * An HLS playlist (media or master) with every line that names a member
 * and every tag's `URI="…"` attribute that does replaced by that member's URL.
 */
export function rewriteHls(text: string, playlistPath: string, urlOf: MemberUrl): string {
  const replace = (reference: string): string | null => {
    const member = resolveReference(playlistPath, reference)
    return member === null ? null : urlOf(member)
  }
  return text
    .split('\n')
    .map((line) => {
      const body = line.endsWith('\r') ? line.slice(0, -1) : line
      const end = line.slice(body.length)
      const trimmed = body.trim()
      if (trimmed === '') return line
      if (trimmed.startsWith('#')) {
        if (!trimmed.startsWith('#EXT')) return line
        return body.replace(URI_ATTRIBUTE, (whole, open: string, reference: string, close: string) => {
          const url = replace(reference)
          return url === null ? whole : `${open}${url}${close}`
        }) + end
      }
      const url = replace(trimmed)
      return url === null ? line : url + end
    })
    .join('\n')
}
