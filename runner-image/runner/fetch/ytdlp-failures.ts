/**
 * yt-dlp's failures, named from its stderr. yt-dlp has no machine-readable
 * error codes: its messages are the sites' own words (YouTube's "Sign in to
 * confirm you're not a bot") or its extractors' fixed texts (GeoRestrictedError,
 * raise_login_required, UnsupportedError, the generic extractor's Cloudflare
 * check). The fixtures in test/unit/ytdlp-failures.test.ts are those texts.
 */
export type YtdlpFailureStatus =
  | 'SOURCE_BOT_CHECK'
  | 'SOURCE_LOGIN_REQUIRED'
  | 'SOURCE_GEO_RESTRICTED'
  | 'SOURCE_UNSUPPORTED_URL'
  | 'SOURCE_UNAVAILABLE'
  | 'DOWNLOAD_TOO_LARGE'
  | 'DOWNLOAD_FAILED'

/** Checked in this order: the first match names the failure. */
const PATTERNS: ReadonlyArray<[YtdlpFailureStatus, RegExp]> = [
  // Before the sign-in patterns: YouTube's bot check says "Sign in to confirm you're not a bot".
  ['SOURCE_BOT_CHECK', /confirm you(?:'|’)?re not a bot|not a robot|anti-bot challenge|captcha|HTTP Error 429/i],
  ['SOURCE_GEO_RESTRICTED', /geo[- ]?restrict|not available (?:from|in) your (?:location|country)|(?:not )?(?:made this video )?available in your country|blocked in your country|use a VPN or a proxy server/i],
  ['SOURCE_LOGIN_REQUIRED', /sign in to confirm|sign in if you've been granted|login required|log in to|requires? (?:a )?login|only available for registered users|private video|use --cookies|members[- ]only|HTTP Error 401/i],
  ['DOWNLOAD_TOO_LARGE', /larger than max-filesize|File is larger than/i],
  ['SOURCE_UNSUPPORTED_URL', /Unsupported URL/i],
  ['SOURCE_UNAVAILABLE', /video unavailable|HTTP Error 404|HTTP Error 410|has been removed|not available|does not exist|Unable to download webpage/i],
]

/** What the user can do about each, said before yt-dlp's own last lines. */
export const YTDLP_FAILURE_HINTS: Record<YtdlpFailureStatus, string> = {
  SOURCE_BOT_CHECK: 'the site asked for a bot check (a sign-in or a challenge) before it would serve the video',
  SOURCE_LOGIN_REQUIRED: 'the video is visible only to signed-in users (private, members-only or age-restricted)',
  SOURCE_GEO_RESTRICTED: 'the video is not available in the region the download runs from',
  SOURCE_UNSUPPORTED_URL: 'yt-dlp found no video at this URL (no extractor supports it and the page embeds none)',
  SOURCE_UNAVAILABLE: 'the video or page is gone or unavailable',
  DOWNLOAD_TOO_LARGE: 'the video is larger than the plan allows',
  DOWNLOAD_FAILED: 'yt-dlp failed',
}

export function classifyYtdlpFailure(stderr: string): YtdlpFailureStatus {
  return PATTERNS.find(([, pattern]) => pattern.test(stderr))?.[0] ?? 'DOWNLOAD_FAILED'
}
