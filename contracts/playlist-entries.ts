/**
 * Whether an HLS playlist names only files beside it. The runner probes the
 * main playlist of an HLS output with the hls demuxer (media-probe.ts), which
 * opens every entry; ffmpeg wrote the playlist, but its bytes can still be
 * the user's (a raw PCM "playlist" copied from a crafted input, say), so the
 * demuxer is used only when every URI line and every URI="…" attribute is a
 * plain relative name: no protocol or drive (`:`), no absolute path, no
 * `..`, no backslash, no percent-encoding, no query. Pure.
 */

const URI_ATTRIBUTE = /URI="([^"]*)"/g
const PLAIN_ENTRY = /^[A-Za-z0-9_][A-Za-z0-9_.\-/]*$/

function plainEntry(uri: string): boolean {
  return PLAIN_ENTRY.test(uri) && !uri.split('/').some((segment) => segment === '..' || segment === '' || segment.startsWith('.'))
}

/** True when `text` is an M3U playlist whose every entry is a plain relative name. */
export function isConfinedPlaylist(text: string): boolean {
  if (!text.startsWith('#EXTM3U')) return false
  for (const raw of text.split(/\r?\n|\r/)) {
    const line = raw.trim()
    if (line === '') continue
    if (line.startsWith('#')) {
      for (const match of line.matchAll(URI_ATTRIBUTE)) if (!plainEntry(match[1] as string)) return false
      continue
    }
    if (!plainEntry(line)) return false
  }
  return true
}
