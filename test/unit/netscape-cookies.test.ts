import t from 'tap'
import { CookieFileError, MAX_COOKIES_TXT_CHARS, NETSCAPE_HEADER, parseNetscapeCookies } from '../../api/ytdlp-cookies/netscape-cookies.js'
import { ytdlpArgs } from '../../runner-image/runner/fetch/ytdlp-args.js'

const line = (fields: string[]) => fields.join('\t')
const SECRET = 'v4lue-that-must-never-be-quoted'
const good = line(['.example.com', 'TRUE', '/', 'TRUE', '1893456000', 'sid', SECRET])

t.test('keeps the cookie lines of a cookies.txt under the header yt-dlp needs, and lists their domains', async (t) => {
  const jar = parseNetscapeCookies(
    ['# Netscape HTTP Cookie File', '# https://curl.se/docs/http-cookies.html', '', good, line(['#HttpOnly_Media.Example.org', 'FALSE', '/a', 'FALSE', '', 'tok', '']), line(['example.com', 'FALSE', '/', 'FALSE', '0', 'x', 'y'])].join('\r\n'),
  )
  t.equal(jar.cookieCount, 3)
  t.same(jar.domains, ['example.com', 'media.example.org'], 'lower case, no leading dot, each once')
  t.equal(jar.text, `${NETSCAPE_HEADER}\n${good}\n${line(['#HttpOnly_Media.Example.org', 'FALSE', '/a', 'FALSE', '', 'tok', ''])}\n${line(['example.com', 'FALSE', '/', 'FALSE', '0', 'x', 'y'])}\n`)
})

t.test('adds the header to a file without one', async (t) => {
  t.equal(parseNetscapeCookies(good).text, `${NETSCAPE_HEADER}\n${good}\n`)
})

t.test('refuses what is not a cookies.txt, naming the line and the field and never quoting it', async (t) => {
  const cases: Array<[string, string, RegExp]> = [
    ['a Cookie header', `sid=${SECRET}`, /^line 1 has 1 tab-separated field; a cookie line has 7/],
    ['JSON', JSON.stringify([{ name: 'sid', value: SECRET }]), /^looks like JSON/],
    ['a JSON object after blank lines', `\n  {"sid": "${SECRET}"}`, /^looks like JSON/],
    ['eight fields', `${good}\textra`, /^line 1 has 8 tab-separated fields/],
    ['spaces for tabs', good.replaceAll('\t', ' '), /^line 1 has 1 tab-separated field/],
    ['a domain with a slash', line(['example.com/x', 'TRUE', '/', 'TRUE', '0', 'sid', SECRET]), /^line 1: the domain \(field 1\)/],
    ['an empty domain', line(['', 'TRUE', '/', 'TRUE', '0', 'sid', SECRET]), /^line 1: the domain/],
    ['a lower-case flag', line(['a.com', 'true', '/', 'TRUE', '0', 'sid', SECRET]), /^line 1: include-subdomains \(field 2\)/],
    ['a relative path', line(['a.com', 'TRUE', 'x', 'TRUE', '0', 'sid', SECRET]), /^line 1: the path \(field 3\)/],
    ['a secure of yes', line(['a.com', 'TRUE', '/', 'yes', '0', 'sid', SECRET]), /^line 1: secure \(field 4\)/],
    ['an expiry date', line(['a.com', 'TRUE', '/', 'TRUE', '2030-01-01', 'sid', SECRET]), /^line 1: expires \(field 5\)/],
    ['an empty name', line(['a.com', 'TRUE', '/', 'TRUE', '0', '', SECRET]), /^line 1: the name \(field 6\)/],
    ['a NUL in the value', line(['a.com', 'TRUE', '/', 'TRUE', '0', 'sid', `${SECRET}\u0000`]), /^line 1: the value \(field 7\) holds a control character/],
    ['a bad third line', `# Netscape HTTP Cookie File\n${good}\n${SECRET}`, /^line 3 has 1 tab-separated field/],
    ['comments only', '# Netscape HTTP Cookie File\n# nothing\n', /^holds no cookie line/],
    ['one character too many', `${good}\n#${'x'.repeat(MAX_COOKIES_TXT_CHARS - good.length - 1)}`, /^is 131073 characters, more than the 131072 accepted/],
  ]
  for (const [what, text, message] of cases) {
    const error = t.throws(() => parseNetscapeCookies(text), CookieFileError, what) as unknown as Error
    t.match(error.message, message, what)
    t.notOk(error.message.includes(SECRET), `${what}: the message quotes no value`)
  }
})

t.test("yt-dlp reads the account's cookies file only when there is one, and none from anywhere else", async (t) => {
  const base = { url: 'https://a.example/v', formatSelector: 'best' as const, outputTemplate: 'inputs/in_a.%(ext)s', maxBytes: 1, ffmpegPath: 'ffmpeg', jsRuntimePath: 'node', socketTimeoutSeconds: 30, proxyUrl: 'http://127.0.0.1:1' }
  const without = ytdlpArgs(base)
  t.ok(without.includes('--no-cookies'))
  t.notOk(without.includes('--cookies'))
  const withFile = ytdlpArgs({ ...base, cookiesFile: '/data/runner/ytdlp-cookies/c-1/cookies.txt' })
  t.equal(withFile[withFile.indexOf('--cookies') + 1], '/data/runner/ytdlp-cookies/c-1/cookies.txt')
  t.notOk(withFile.includes('--no-cookies'), '--no-cookies would cancel --cookies')
  t.ok(withFile.includes('--no-cookies-from-browser'), 'never a browser profile of the machine')
  t.same(withFile.slice(-2), ['--', 'https://a.example/v'])
})
