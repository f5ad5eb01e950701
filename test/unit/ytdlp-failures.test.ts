import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { classifyYtdlpFailure } from '../../runner-image/runner/fetch/ytdlp-failures.js'
import { checkoutPath } from '../harness/checkout.js'

/**
 * Each fixture is yt-dlp's stderr for one failure, with the texts of its
 * extractors and of the sites they relay; the file name's prefix is the
 * error_status a user should get for it.
 */
const FIXTURES = checkoutPath('test', 'unit', 'ytdlp-stderr')
const EXPECTED: Record<string, string> = {
  'bot-check': 'SOURCE_BOT_CHECK',
  'login-required': 'SOURCE_LOGIN_REQUIRED',
  'geo-restricted': 'SOURCE_GEO_RESTRICTED',
  unavailable: 'SOURCE_UNAVAILABLE',
  'unsupported-url': 'SOURCE_UNSUPPORTED_URL',
  'download-failed': 'DOWNLOAD_FAILED',
}

t.test("names each yt-dlp failure from its stderr", async (t) => {
  const files = readdirSync(FIXTURES).filter((name) => name.endsWith('.txt'))
  const seen = new Set<string>()
  for (const file of files) {
    const prefix = Object.keys(EXPECTED).find((p) => file.startsWith(p))
    if (!prefix) throw new Error(`${file}: no expected status for its name`)
    seen.add(prefix)
    t.equal(classifyYtdlpFailure(readFileSync(join(FIXTURES, file), 'utf8')), EXPECTED[prefix], file)
  }
  t.same([...seen].sort(), Object.keys(EXPECTED).sort(), 'a fixture of every named failure')
})

t.test('names an oversized download and keeps instagram\'s "rate-limit reached or login required" a sign-in', async (t) => {
  t.equal(classifyYtdlpFailure('[download] File is larger than max-filesize (1000 bytes > 10 bytes). Aborting.'), 'DOWNLOAD_TOO_LARGE')
  t.equal(classifyYtdlpFailure('ERROR: [instagram] xyz: Requested content is not available, rate-limit reached or login required. Use --cookies'), 'SOURCE_LOGIN_REQUIRED')
})
