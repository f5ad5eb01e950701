import t from 'tap'
import { concatListProblem, hlsNestedPlaylists, hlsPlaylistProblem, listEntryProblem, subtitleFileProblem } from '../../contracts/work-file-content.js'

const SRT = '1\n00:00:00,000 --> 00:00:02,000\nHello\n'

// [name, bytes, expected problem (null: accepted)]
const subtitles: Array<[string, Buffer, RegExp | null]> = [
  ['a SubRip file', Buffer.from(SRT), null],
  ['a SubRip file with a BOM and CRLF', Buffer.from(`\uFEFF${SRT.replaceAll('\n', '\r\n')}`), null],
  ['a SubRip file without cue numbers', Buffer.from('00:00:01.000 --> 00:00:02.000\nHi\n'), null],
  ['a WebVTT file', Buffer.from('WEBVTT\n\n00:00.000 --> 00:02.000\nHi\n'), null],
  ['an ASS file', Buffer.from('[Script Info]\nScriptType: v4.00+\n'), null],
  ['a Matroska file', Buffer.from([0x1a, 0x45, 0xdf, 0xa3, 0x01, 0x00]), null],
  ['an MP4 file', Buffer.concat([Buffer.from([0, 0, 0, 0x18]), Buffer.from('ftypisom')]), null],
  ['an HLS playlist posing as .srt', Buffer.from('#EXTM3U\n#EXTINF:1,\n/etc/passwd\n'), /an HLS playlist/],
  ['a concat list posing as .srt', Buffer.from("ffconcat version 1.0\nfile '/etc/passwd'\n"), /a concat list/],
  ['an AVI file (a GAB2 subtitle can hold a playlist)', Buffer.from('RIFF\0\0\0\0AVI LIST'), /not a subtitle file/],
  ['plain text', Buffer.from('hello\nworld\n'), /not a subtitle file/],
  ['an empty file', Buffer.alloc(0), /not a subtitle file/],
]

for (const [name, bytes, expected] of subtitles) {
  t.test(`${expected === null ? 'accepts' : 'refuses'} ${name} for the subtitles filter`, async (t) => {
    const why = subtitleFileProblem(bytes)
    if (expected === null) t.equal(why, null)
    else t.match(why, expected)
  })
}

// [name, playlist, expected problem]
const playlists: Array<[string, string, RegExp | null]> = [
  ['a playlist of relative segments', '#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXTINF:1,\nseg0.ts\n#EXTINF:1,\nsub/seg1.ts\n#EXT-X-ENDLIST\n', null],
  ['a master playlist with renditions and an init section', '#EXTM3U\n#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="a",URI="audio/index.m3u8"\n#EXT-X-STREAM-INF:BANDWIDTH=1\nv0/index.m3u8\n#EXT-X-MAP:URI="v0/init.mp4"\n', null],
  ['an absolute segment', '#EXTM3U\n#EXTINF:1,\n/etc/passwd.ts\n', /line 3: "\/etc\/passwd.ts": absolute paths/],
  ['a segment climbing out', '#EXTM3U\n#EXTINF:1,\n../../secret.ts\n', /line 3: "..\/..\/secret.ts": each part/],
  ['a file: segment', '#EXTM3U\n#EXTINF:1,\nfile:///etc/passwd\n', /protocols and URLs/],
  ['an http segment', '#EXTM3U\n#EXTINF:1,\nhttp://169.254.169.254/x.ts\n', /protocols and URLs/],
  ['a concat: segment', '#EXTM3U\n#EXTINF:1,\nconcat:a.ts|/etc/passwd\n', /protocols and URLs/],
  ['an init section outside', '#EXTM3U\n#EXT-X-MAP:URI="/etc/passwd"\n#EXTINF:1,\na.ts\n', /line 2: "\/etc\/passwd": absolute/],
  ['a key at a URL', '#EXTM3U\n#EXT-X-KEY:METHOD=AES-128,URI="http://10.0.0.1/k"\n#EXTINF:1,\na.ts\n', /line 2: .*protocols/],
  ['a text that is not a playlist', 'seg0.ts\n', /does not start with #EXTM3U/],
]

for (const [name, text, expected] of playlists) {
  t.test(`${expected === null ? 'accepts' : 'refuses'} ${name} in an HLS playlist`, async (t) => {
    const why = hlsPlaylistProblem(text)
    if (expected === null) t.equal(why, null)
    else t.match(why, expected)
  })
}

// [name, list, expected problem]
const lists: Array<[string, string, RegExp | null]> = [
  ['a list of relative files', "ffconcat version 1.0\n# clips\nfile 'a.mp4'\nduration 2\nfile clips/b.mp4\ninpoint 1\n", null],
  ['a file with an escaped blank', 'file my\\ clip.mp4\n', /"my clip.mp4": each part/],
  ['an absolute file', "file '/etc/passwd'\n", /line 1: "\/etc\/passwd": absolute/],
  ['a file climbing out', 'file ../x.mp4\n', /"..\/x.mp4"/],
  ['a protocol', "file 'subfile,,start,0,end,100,,:/etc/passwd'\n", /protocols|each part/],
  ['the option directive', "file a.mp4\noption protocol_whitelist file,http\n", /line 2: the option directive is not allowed/],
  ['an unknown directive', 'include other.txt\n', /unknown directive "include"/],
]

for (const [name, text, expected] of lists) {
  t.test(`${expected === null ? 'accepts' : 'refuses'} ${name} in a concat list`, async (t) => {
    const why = concatListProblem(text)
    if (expected === null) t.equal(why, null)
    else t.match(why, expected)
  })
}

t.test('holds list entries to relative paths of plain parts', async (t) => {
  t.equal(listEntryProblem('a/b/c.ts'), null)
  t.match(listEntryProblem('a//b.ts'), /each part/)
  t.match(listEntryProblem('.hidden.ts'), /each part/)
  t.match(listEntryProblem('C:/x.ts'), /protocols/)
})

t.test('finds the playlists a master playlist names, in lines and in URI attributes, each once', async (t) => {
  const master = '#EXTM3U\n#EXT-X-MEDIA:TYPE=AUDIO,URI="audio/index.M3U8"\n#EXT-X-STREAM-INF:BANDWIDTH=1\nv0/index.m3u8\n#EXT-X-STREAM-INF:BANDWIDTH=2\nv0/index.m3u8\n#EXTINF:1,\nseg.ts\n'
  t.same(hlsNestedPlaylists(master), ['audio/index.M3U8', 'v0/index.m3u8'])
})
