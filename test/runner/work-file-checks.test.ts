import { mkdir, symlink } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import type tap from 'tap'
import type { WorkFileCheck } from '../../contracts/ffmpeg-work-files.js'
import { RunnerFailure } from '../../runner-image/runner/failure.js'
import { checkWorkFiles } from '../../runner-image/runner/run/work-file-checks.js'

async function workDir(t: Pick<typeof tap, 'testdir'>): Promise<string> {
  const dir = t.testdir({
    frames: { 'img_001.png': 'x', 'img_002.png': 'x' },
    fonts: { 'a.ttf': 'x' },
    subs: { 'ok.srt': '1\n00:00:00,000 --> 00:00:01,000\nHi\n', 'evil.srt': '#EXTM3U\n#EXTINF:1,\n/etc/passwd\n' },
    'good.m3u8': '#EXTM3U\n#EXTINF:1,\nseg0.ts\n#EXT-X-ENDLIST\n',
    'master.m3u8': '#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1\nv0/index.m3u8\n#EXT-X-STREAM-INF:BANDWIDTH=2\nv1/index.m3u8\n',
    'loop.m3u8': '#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1\nloop.m3u8\n',
    v0: { 'index.m3u8': '#EXTM3U\n#EXTINF:1,\nseg0.ts\n#EXT-X-ENDLIST\n' },
    v1: { 'index.m3u8': '#EXTM3U\n#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="a",URI="../a/index.m3u8"\n#EXTINF:1,\n/etc/secret.ts\n' },
    'evil.m3u8': '#EXTM3U\n#EXTINF:1,\n../../../etc/x.ts\n',
    'list.txt': "file 'frames/img_001.png'\n",
    dash: {
      'good.mpd': '<?xml version="1.0"?>\n<MPD type="static"><Period><AdaptationSet><Representation id="0" bandwidth="1"><SegmentTemplate media="c-$Number$.m4s" initialization="init.m4s"/></Representation></AdaptationSet></Period></MPD>\n',
      'evil.mpd': '<?xml version="1.0"?>\n<MPD type="static">\n<BaseURL>../../../etc/</BaseURL><Period/></MPD>\n',
    },
    'evil.txt': "file a.mp4\noption safe 0\n",
  })
  await mkdir(join(dir, 'outputs'))
  return dir
}

const check = (kind: WorkFileCheck['kind'], path: string): WorkFileCheck => ({ kind, path, argument: `arg ${kind}` })

t.test('passes files, directories, sequences and lists that are there and safe', async (t) => {
  const dir = await workDir(t)
  await t.resolves(checkWorkFiles(dir, [
    check('file', 'frames/img_001.png'),
    check('directory', 'fonts'),
    check('sequence', 'frames/img_%03d.png'),
    check('subtitles', 'subs/ok.srt'),
    check('hls', 'good.m3u8'),
    check('hls', 'loop.m3u8'),
    check('concat', 'list.txt'),
    check('dash', 'dash/good.mpd'),
  ]))
})

// [name, check, message]
const failures: Array<[string, WorkFileCheck, RegExp]> = [
  ['a folder entry that is not there', check('file', 'clips/a.mp4'), /^arg file: clips\/a.mp4: no such file in the work directory$/],
  ['a directory given as a file', check('file', 'fonts'), /fonts: not a regular file/],
  ['a fonts directory that is not there', check('directory', 'nofonts'), /nofonts: the folder has no such directory/],
  ['a sequence no file matches', check('sequence', 'frames/pic_%03d.png'), /no file of the folder matches this numbered sequence/],
  ['a sequence in a missing directory', check('sequence', 'shots/img_%03d.png'), /the folder has no such directory/],
  ['a subtitle file that is really a playlist', check('subtitles', 'subs/evil.srt'), /^arg subtitles: subs\/evil.srt: it is an HLS playlist, not a subtitle file$/],
  ['a playlist climbing out of the work dir', check('hls', 'evil.m3u8'), /evil.m3u8: line 3: "..\/..\/..\/etc\/x.ts"/],
  ['a variant playlist a master names, naming something outside', check('hls', 'master.m3u8'), /^arg hls: master.m3u8: v1\/index.m3u8: line 2: "..\/a\/index.m3u8": each part/],
  ['a DASH manifest whose BaseURL climbs out', check('dash', 'dash/evil.mpd'), /^arg dash: dash\/evil.mpd: line 3: "\.\.\/\.\.\/\.\.\/etc\/" each part/],
  ['a file given as a DASH manifest that is none', check('dash', 'list.txt'), /list.txt: it is not a DASH manifest/],
  ['a concat list with an option directive', check('concat', 'evil.txt'), /evil.txt: line 2: the option directive is not allowed/],
]

for (const [name, failing, message] of failures) {
  t.test(`fails INVALID_COMMAND on ${name}`, async (t) => {
    const dir = await workDir(t)
    const error = await checkWorkFiles(dir, [failing]).then(() => null, (e: unknown) => e)
    t.ok(error instanceof RunnerFailure)
    if (error instanceof RunnerFailure) {
      t.equal(error.errorStatus, 'INVALID_COMMAND')
      t.match(error.message, message)
    }
  })
}

t.test('fails on an entry whose directory is a symlink leading out of the work dir', async (t) => {
  const dir = await workDir(t)
  await symlink('/etc', join(dir, 'link'))
  const error = await checkWorkFiles(dir, [check('file', 'link/passwd')]).then(() => null, (e: unknown) => e)
  t.ok(error instanceof RunnerFailure)
  t.match((error as Error).message, /link\/passwd: leads outside the work directory/)
})
