import t from 'tap'
import { rewriteDash } from '../../api/files/dash-rewrite.js'
import { playlistKind, resolveReference, rewriteHls } from '../../api/files/playlist-rewrite.js'

t.test('a playlist is known by its extension, any case', async (t) => {
  const cases: [string, ReturnType<typeof playlistKind>][] = [
    ['prog.m3u8', 'hls'],
    ['v0/PROG.M3U8', 'hls'],
    ['list.m3u', 'hls'],
    ['manifest.mpd', 'dash'],
    ['seg_001.ts', null],
    ['m3u8.ts', null],
  ]
  for (const [name, kind] of cases) t.equal(playlistKind(name), kind, name)
})

t.test('a reference resolves against its playlist\'s folder and never leaves the output', async (t) => {
  const cases: [string, string, string | null][] = [
    ['prog.m3u8', 'seg_001.ts', 'seg_001.ts'],
    ['v0/prog.m3u8', 'seg_001.ts', 'v0/seg_001.ts'],
    ['master.m3u8', 'v1/prog.m3u8', 'v1/prog.m3u8'],
    ['v0/prog.m3u8', '../v1/seg.ts', 'v1/seg.ts'],
    ['v0/prog.m3u8', './seg.ts', 'v0/seg.ts'],
    ['prog.m3u8', '../secret.ts', null],
    ['v0/prog.m3u8', '../../x.ts', null],
    ['prog.m3u8', '/etc/passwd', null],
    ['prog.m3u8', 'https://cdn.example.com/seg.ts', null],
    ['prog.m3u8', 'file:seg.ts', null],
    ['prog.m3u8', 'concat:a.ts|b.ts', null],
    ['prog.m3u8', 'seg.ts?x=1', null],
    ['prog.m3u8', '', null],
  ]
  for (const [playlist, reference, member] of cases) t.equal(resolveReference(playlist, reference), member, `${playlist} → ${reference}`)
})

const urls: Record<string, string> = {
  'seg_000.ts': 'https://s3/seg_000.ts?sig=a&b=1',
  'seg_001.ts': 'https://s3/seg_001.ts?sig=b',
  'v0/prog.m3u8': 'https://s3/playback/v0/prog.m3u8?sig=c',
  'v0/init.mp4': 'https://s3/v0/init.mp4?sig=d',
  'audio/prog.m3u8': 'https://s3/playback/audio/prog.m3u8?sig=e',
}
const urlOf = (name: string) => urls[name] ?? null

t.test('a media playlist\'s segment lines become their URLs, and every other line stays byte for byte', async (t) => {
  const text = '#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:1\n#EXTINF:1.000000,\nseg_000.ts\n#EXTINF:1.000000,\nseg_001.ts\n#EXTINF:1.0,\nmissing.ts\n#EXTINF:1.0,\nhttps://cdn.example.com/x.ts\n#EXT-X-ENDLIST\n'
  t.equal(
    rewriteHls(text, 'prog.m3u8', urlOf),
    '#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:1\n#EXTINF:1.000000,\nhttps://s3/seg_000.ts?sig=a&b=1\n#EXTINF:1.000000,\nhttps://s3/seg_001.ts?sig=b\n#EXTINF:1.0,\nmissing.ts\n#EXTINF:1.0,\nhttps://cdn.example.com/x.ts\n#EXT-X-ENDLIST\n',
  )
})

t.test('CRLF line ends and a last line without one are kept', async (t) => {
  t.equal(rewriteHls('#EXTM3U\r\n#EXTINF:1,\r\nseg_000.ts\r\n#EXTINF:1,\r\nseg_001.ts', 'p.m3u8', urlOf), '#EXTM3U\r\n#EXTINF:1,\r\nhttps://s3/seg_000.ts?sig=a&b=1\r\n#EXTINF:1,\r\nhttps://s3/seg_001.ts?sig=b')
})

t.test('a master playlist\'s variants, and URI attributes of tags, become their URLs', async (t) => {
  const text = [
    '#EXTM3U',
    '#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="aud",NAME="a",URI="audio/prog.m3u8"',
    '#EXT-X-STREAM-INF:BANDWIDTH=1000,AUDIO="aud"',
    'v0/prog.m3u8',
    '#EXT-X-I-FRAME-STREAM-INF:BANDWIDTH=100,URI="v0/prog.m3u8"',
    '# a comment naming URI="v0/prog.m3u8" stays',
    '',
  ].join('\n')
  t.equal(
    rewriteHls(text, 'master.m3u8', urlOf),
    [
      '#EXTM3U',
      '#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="aud",NAME="a",URI="https://s3/playback/audio/prog.m3u8?sig=e"',
      '#EXT-X-STREAM-INF:BANDWIDTH=1000,AUDIO="aud"',
      'https://s3/playback/v0/prog.m3u8?sig=c',
      '#EXT-X-I-FRAME-STREAM-INF:BANDWIDTH=100,URI="https://s3/playback/v0/prog.m3u8?sig=c"',
      '# a comment naming URI="v0/prog.m3u8" stays',
      '',
    ].join('\n'),
  )
})

t.test('an fMP4 playlist\'s init segment in EXT-X-MAP resolves from the playlist\'s own folder', async (t) => {
  t.equal(rewriteHls('#EXTM3U\n#EXT-X-MAP:URI="init.mp4"\n#EXTINF:1,\n../seg_000.ts\n', 'v0/prog.m3u8', urlOf), '#EXTM3U\n#EXT-X-MAP:URI="https://s3/v0/init.mp4?sig=d"\n#EXTINF:1,\nhttps://s3/seg_000.ts?sig=a&b=1\n')
})

t.test('a playlist that names nothing of the output is unchanged', async (t) => {
  const text = '#EXTM3U\n#EXT-X-KEY:METHOD=AES-128,URI="file:///etc/passwd"\n#EXTINF:1,\n/etc/passwd\n#EXTINF:1,\n../../x.ts\n'
  t.equal(rewriteHls(text, 'p.m3u8', urlOf), text)
})

const DASH_URLS = (name: string) => (/^(init|chunk)-/.test(name) ? `https://s3/${name}?a=1&b=2` : null)
const mpd = (template: string, timeline = '<SegmentTimeline><S t="0" d="10" r="1" /></SegmentTimeline>') =>
  `<MPD><Period><AdaptationSet><Representation id="0" bandwidth="900"><SegmentTemplate timescale="10" ${template}>${timeline}</SegmentTemplate></Representation></AdaptationSet></Period></MPD>`

t.test('a DASH template becomes a list of its segments\' URLs, escaped for XML, the timing kept', async (t) => {
  const out = rewriteDash(mpd('initialization="init-$RepresentationID$.m4s" media="chunk-$RepresentationID$-$Number%03d$.m4s" startNumber="1"'), 'm.mpd', DASH_URLS, 10)
  t.equal(
    out,
    '<MPD><Period><AdaptationSet><Representation id="0" bandwidth="900"><SegmentList timescale="10" duration="10">\n' +
      '<Initialization sourceURL="https://s3/init-0.m4s?a=1&amp;b=2"/>\n' +
      '<SegmentTimeline><S t="0" d="10" r="1" /></SegmentTimeline>\n' +
      '<SegmentURL media="https://s3/chunk-0-001.m4s?a=1&amp;b=2"/>\n' +
      '<SegmentURL media="https://s3/chunk-0-002.m4s?a=1&amp;b=2"/>\n' +
      '</SegmentList></Representation></AdaptationSet></Period></MPD>',
  )
})

t.test('a $Time$ template takes its names from the timeline', async (t) => {
  const out = rewriteDash(mpd('media="chunk-$Time$.m4s"', '<SegmentTimeline><S t="100" d="10" r="1" /><S d="7" /></SegmentTimeline>'), 'm.mpd', (n) => (['chunk-100.m4s', 'chunk-110.m4s', 'chunk-120.m4s'].includes(n) ? `u:${n}` : null), 3)
  t.same([...out.matchAll(/media="([^"]+)"/g)].map((m) => m[1]), ['u:chunk-100.m4s', 'u:chunk-110.m4s', 'u:chunk-120.m4s'])
})

t.test('a manifest this rewrite cannot serve is left exactly as written', async (t) => {
  const cases: [string, string][] = [
    ['a BaseURL', mpd('media="chunk-$Number$.m4s"').replace('<Period>', '<Period><BaseURL>https://cdn.example.com/</BaseURL>')],
    ['a segment the output does not hold', mpd('media="other-$Number$.m4s"')],
    ['an init segment it does not hold', mpd('initialization="/etc/passwd" media="chunk-$Number$.m4s"')],
    ['a timeline repeating to the end', mpd('media="chunk-$Number$.m4s"', '<SegmentTimeline><S t="0" d="10" r="-1" /></SegmentTimeline>')],
    ['an unknown identifier', mpd('media="chunk-$Foo$.m4s"')],
  ]
  for (const [name, text] of cases) t.equal(rewriteDash(text, 'm.mpd', DASH_URLS, 10), text, name)
})
