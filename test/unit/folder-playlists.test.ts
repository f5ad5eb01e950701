import t from 'tap'
import { concatProblems, dashProblems, hlsProblems, listedPathProblem, listProblems, unquoteToken } from '../../contracts/media-lists.js'

t.test('accepts relative paths inside the folder', async (t) => {
  for (const path of ['seg_001.ts', 'v0/seg_1.ts', 'clips/a b.mp4', 'key.bin?x=1', 'a..b.ts', './a.ts']) t.equal(listedPathProblem(path), null, path)
})

t.test('refuses protocols, absolute paths, leaving the folder and encodings', async (t) => {
  const cases: Array<[string, RegExp]> = [
    ['/etc/passwd', /absolute/],
    ['~/x', /absolute/],
    ['../x', /leaves the folder/],
    ['a/../../x', /leaves the folder/],
    ['file:/etc/passwd', /protocol/],
    ['file:///etc/passwd', /protocol/],
    ['concat:a.ts|/etc/passwd', /protocol/],
    ['http://169.254.169.254/latest', /protocol/],
    ['subfile,,start,0,end,0,,:/etc/passwd', /protocol/],
    ['C:/x', /protocol/],
    ['a\\..\\x', /backslash/],
    ['%2e%2e/x', /encoded/],
    ['.ffkube/phases.json', /hidden/],
    ['a|b', /"\|"/],
    ['', /empty/],
    ['a\nb', /control/],
  ]
  for (const [path, reason] of cases) t.match(listedPathProblem(path), reason, JSON.stringify(path))
})

t.test('checks every URI line and URI attribute of an HLS playlist', async (t) => {
  const playlist = [
    '#EXTM3U',
    '#EXT-X-VERSION:7',
    '#EXT-X-KEY:METHOD=AES-128,URI="file:///etc/ssl/key"',
    '#EXT-X-MAP:URI="init.mp4"',
    '#EXTINF:1.0,',
    'seg_000.m4s',
    '#EXTINF:1.0,',
    '../../etc/passwd',
    '#EXTINF:1.0,',
    'concat:seg_000.m4s|/etc/passwd',
  ].join('\n')
  const problems = hlsProblems(playlist)
  t.same(problems.map((p) => [p.line, p.entry]), [[3, 'file:///etc/ssl/key'], [8, '../../etc/passwd'], [10, 'concat:seg_000.m4s|/etc/passwd']])
  t.same(hlsProblems('#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1\nv0/index.m3u8\n#EXT-X-MEDIA:TYPE=AUDIO,URI="a/index.m3u8"\n'), [], 'a clean master playlist')
})

t.test('checks the BaseURL, segment templates and links of a DASH manifest', async (t) => {
  const mpd = `<?xml version="1.0"?>
<MPD xmlns="urn:mpeg:dash:schema:mpd:2011" xmlns:xlink="http://www.w3.org/1999/xlink">
  <BaseURL>file:///etc/</BaseURL>
  <Period xlink:href="http://example.com/period.xml">
    <AdaptationSet>
      <Representation id="0">
        <SegmentTemplate media="chunk-$RepresentationID$-$Number%05d$.m4s" initialization="/etc/passwd"/>
      </Representation>
    </AdaptationSet>
  </Period>
</MPD>`
  t.same(dashProblems(mpd).map((p) => p.entry).sort(), ['/etc/passwd', 'file:///etc/', 'http://example.com/period.xml'])
  t.same(dashProblems('<MPD><BaseURL></BaseURL><Period><SegmentTemplate media="c-$Number$.m4s" initialization="init-$RepresentationID$.m4s"/></Period></MPD>'), [])
})

t.test('reads concat lists as the demuxer does', async (t) => {
  t.equal(unquoteToken("'a b.mp4'"), 'a b.mp4')
  t.equal(unquoteToken("a\\ b.mp4 trailing"), 'a b.mp4')
  t.equal(unquoteToken("'/etc/'passwd"), '/etc/passwd')
  const list = ["ffconcat version 1.0", "file 'clips/a.mp4'", "duration 1", "file '/etc/passwd'", "file ..\\/x", "  file 'file:x'", "option protocol_whitelist http", "# file /etc/shadow"].join('\n')
  t.same(concatProblems(list).map((p) => [p.line, p.entry]), [[4, '/etc/passwd'], [5, '../x'], [6, 'file:x'], [7, 'protocol_whitelist http']])
})

t.test('reads any text as every kind of list it could be', async (t) => {
  t.same(listProblems('1\n00:00:00,000 --> 00:00:01,000\nhello\n'), [], 'a subtitle file is no list')
  t.equal(listProblems('\uFEFF#EXTM3U\n/etc/passwd\n').length, 1, 'HLS by content, BOM and all')
  t.equal(listProblems("file '/etc/passwd'\n").length, 1, 'a concat list by content, whatever its name')
  t.equal(listProblems('<MPD><BaseURL>http://x/</BaseURL></MPD>').length, 1)
})

t.test('reads HLS lines as ff_get_line does: NUL ends a line, an overlong line is refused', async (t) => {
  t.same(hlsProblems('#EXTM3U\n#EXT-X-COMMENT\u0000/etc/passwd\n').map((p) => p.entry), ['/etc/passwd'])
  t.match(hlsProblems(`#EXTM3U\n${'a/'.repeat(2100)}../x\n`), [{ line: 2, reason: /longer than 4000/ }])
})

t.test('stops a concat list where the demuxer stops: at the first unknown keyword', async (t) => {
  t.same(concatProblems("1\n00:00:00,000 --> 00:00:01,000\nfile '/etc/passwd'\n"), [], 'the demuxer fails on line 1 and opens nothing')
  t.same(concatProblems("# comment\u0000\u0001binary\n\nfile '/etc/passwd'\n").map((p) => p.line), [3], 'a comment line with bytes after a NUL is still a comment')
  t.same(concatProblems("file 'a.mp4'\u0000\nfile '/etc/passwd'\n").map((p) => p.entry), ['/etc/passwd'])
})
