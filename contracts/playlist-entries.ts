/**
 * Whether an HLS playlist names only files beside it. The runner probes the
 * main playlist of an HLS output with the hls demuxer (media-probe.ts), which
 * opens every entry; ffmpeg wrote the playlist, but its bytes can still be
 * the user's (a raw PCM "playlist" copied from a crafted input, say), so the
 * demuxer is used only when every URI line and every URI="…" attribute, read
 * as media-lists.ts reads them, is a plain relative name: no protocol or drive
 * (`:`), no absolute path, no `..`, no backslash, no percent-encoding, no
 * query. Pure.
 */
import { hlsProblems } from './media-lists.js'

const PLAIN_ENTRY = /^[A-Za-z0-9_][A-Za-z0-9_.\-/]*$/

/** Why `uri` is not a plain relative name, or null. */
function plainEntryProblem(uri: string): string | null {
  const plain = PLAIN_ENTRY.test(uri) && !uri.split('/').some((segment) => segment === '..' || segment === '' || segment.startsWith('.'))
  return plain ? null : 'is not a plain relative name'
}

/** True when `text` is an M3U playlist whose every entry is a plain relative name. */
export function isConfinedPlaylist(text: string): boolean {
  return text.startsWith('#EXTM3U') && hlsProblems(text, plainEntryProblem).length === 0
}
