/**
 * Submit-time rejection of video URLs that cannot work, as the spec asks for
 * "obviously unavailable URLs from two major video platforms": here YouTube
 * and Vimeo links whose video id is malformed. Pure and offline: removed
 * videos need a network check, which belongs to the runner's download step.
 */
import { hostName } from '../../contracts/url-guard.js'

const YOUTUBE_HOSTS = new Set(['youtube.com', 'www.youtube.com', 'm.youtube.com', 'music.youtube.com'])
const YOUTUBE_ID = /^[A-Za-z0-9_-]{11}$/
const VIMEO_HOSTS = new Set(['vimeo.com', 'www.vimeo.com', 'player.vimeo.com'])

/** The YouTube video id a URL names: null when it is no video link (a channel, a playlist), undefined for no YouTube URL. */
function youtubeId(url: URL): string | null | undefined {
  const host = hostName(url)
  if (host === 'youtu.be') return url.pathname.slice(1).split('/')[0] ?? ''
  if (!YOUTUBE_HOSTS.has(host)) return undefined
  if (url.pathname === '/watch') return url.searchParams.get('v') ?? ''
  const match = /^\/(shorts|embed|live|v)\/([^/]*)/.exec(url.pathname)
  return match ? (match[2] ?? '') : null
}

/** Why a video URL is obviously unusable, or null. */
export function videoUrlProblem(value: string): string | null {
  let url: URL
  try {
    url = new URL(value)
  } catch {
    return null // the URL checks report it
  }
  const youtube = youtubeId(url)
  if (youtube !== undefined && youtube !== null && !YOUTUBE_ID.test(youtube)) {
    return `"${youtube}" is not a YouTube video id (11 letters, digits, - or _)`
  }
  const host = hostName(url)
  if (VIMEO_HOSTS.has(host)) {
    const first = url.pathname.split('/').filter(Boolean)
    const id = host === 'player.vimeo.com' ? first[1] : first[0]
    if (id !== undefined && /^\d/.test(id) && !/^\d{1,12}$/.test(id)) return `"${id}" is not a Vimeo video id (digits)`
  }
  return null
}

/** Every obviously unusable URL of an `in_*` map, as one message; null when there is none. */
export function unavailableVideos(inputUrls: Record<string, string>, field: string): string | null {
  const bad = Object.entries(inputUrls)
    .map(([alias, url]) => [alias, videoUrlProblem(url)] as const)
    .filter((entry): entry is readonly [string, string] => entry[1] !== null)
  if (bad.length === 0) return null
  return `${field}: ${bad.length === 1 ? 'this URL is' : 'these URLs are'} unavailable: ${bad.map(([alias, problem]) => `${alias}: ${problem}`).join('; ')}`
}
