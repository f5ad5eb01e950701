/**
 * What ffmpeg itself holds, with the options the policy places before a list
 * input or a movie source and without the runner's own reading of the list
 * (runner-image/runner/run/work-file-checks.ts): the real binary, run on the
 * argv the policy builds, in a work dir beside a "secret" it must not read.
 */
import { execFile } from 'node:child_process'
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { promisify } from 'node:util'
import t from 'tap'
import { toolPath } from '../../api/local/tools.js'
import { applyFfmpegPolicy } from '../../contracts/ffmpeg-policy.js'
import { probeDuration } from '../harness/media.js'
import { scratchDir } from '../harness/scratch.js'

const run = promisify(execFile)

/** Runs the policy's argv for `command` (a folder command writing out.mkv) in `work`; the exit and stderr. */
async function ffmpegOf(work: string, command: string): Promise<{ code: number; stderr: string }> {
  const outcome = applyFfmpegPolicy(command, { mode: 'ffmpeg', inputs: {}, outputs: { out_x: 'out.mkv' }, folder: true })
  if (!outcome.ok) throw new Error(outcome.violation.message)
  return run(toolPath('ffmpeg'), ['-loglevel', 'error', ...outcome.value.argv], { cwd: work }).then(
    ({ stderr }) => ({ code: 0, stderr }),
    (error: { code: number; stderr: string }) => ({ code: error.code, stderr: error.stderr }),
  )
}

t.test('ffmpeg holds list inputs to the work dir with the options the policy forces', async (t) => {
  const dir = await scratchDir(t, 'ffkube-lists-')
  const work = join(dir, 'work')
  await Promise.all([mkdir(join(work, 'outputs'), { recursive: true }), mkdir(join(work, 'dash'), { recursive: true })])
  const secret = join(dir, 'secret.ts')
  const tone = (path: string, format: string) =>
    run(toolPath('ffmpeg'), ['-loglevel', 'error', '-f', 'lavfi', '-i', 'sine=duration=1', '-c:a', 'mp2', '-f', format, path])
  await Promise.all([tone(secret, 'mpegts'), tone(join(work, 'seg0.ts'), 'mpegts'), tone(join(work, 'avi.ts'), 'avi'), tone(join(work, 'a.mkv'), 'matroska')])
  const lists: Record<string, string> = {
    'good.m3u8': '#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXTINF:1,\nseg0.ts\n#EXT-X-ENDLIST\n',
    'abs.m3u8': `#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXTINF:1,\n${secret}\n#EXT-X-ENDLIST\n`,
    'passwd.m3u8': '#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXTINF:1,\n/etc/passwd\n#EXT-X-ENDLIST\n',
    'proto.m3u8': '#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXTINF:1,\nconcat:seg0.ts|/etc/passwd\n#EXT-X-ENDLIST\n',
    'avi.m3u8': '#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXTINF:1,\navi.ts\n#EXT-X-ENDLIST\n',
    'good.txt': 'ffconcat version 1.0\nfile a.mkv\nfile a.mkv\n',
    'abs.txt': `ffconcat version 1.0\nfile ${secret}\n`,
    'up.txt': 'ffconcat version 1.0\nfile ../secret.ts\n',
    'option.txt': 'ffconcat version 1.0\nfile seg0.ts\noption protocol_whitelist file,subfile\n',
  }
  await Promise.all(Object.entries(lists).map(([name, text]) => writeFile(join(work, name), text)))
  // DASH: a manifest our ffmpeg wrote, and hand-made ones of one SegmentList entry.
  await run(toolPath('ffmpeg'), ['-loglevel', 'error', '-f', 'lavfi', '-i', 'sine=duration=2', '-c:a', 'aac', '-f', 'dash', '-seg_duration', '1', join(work, 'dash', 'good.mpd')])
  const segmentList = (media: string, baseUrl = '') => `<?xml version="1.0"?>
<MPD xmlns="urn:mpeg:dash:schema:mpd:2011" profiles="urn:mpeg:dash:profile:isoff-live:2011" type="static" mediaPresentationDuration="PT1S" minBufferTime="PT1S">
  ${baseUrl === '' ? '' : `<BaseURL>${baseUrl}</BaseURL>`}
  <Period><AdaptationSet mimeType="audio/mp2t"><Representation id="0" bandwidth="1000">
    <SegmentList duration="1"><SegmentURL media="${media}"/></SegmentList>
  </Representation></AdaptationSet></Period>
</MPD>
`
  const manifests: Record<string, string> = {
    'dash/abs.mpd': segmentList(secret),
    'dash/passwd.mpd': segmentList('passwd', '/etc/'),
    'dash/http.mpd': segmentList('x.ts', 'http://169.254.169.254/'),
    'dash/concat.mpd': segmentList('../list.ts'),
    'dash/hls.mpd': segmentList('../playlist.ts'),
  }
  await Promise.all([
    ...Object.entries(manifests).map(([name, text]) => writeFile(join(work, name), text)),
    writeFile(join(work, 'list.ts'), 'ffconcat version 1.0\nfile seg0.ts\n'),
    writeFile(join(work, 'playlist.ts'), lists['good.m3u8']!),
  ])

  t.test('reads a playlist and a concat list of work-dir files', async (t) => {
    t.equal((await ffmpegOf(work, 'ffmpeg -i good.m3u8 -c copy {{out_x}}')).code, 0)
    t.ok((await probeDuration(join(work, 'outputs', 'out.mkv'))) > 0.9)
    const joined = await ffmpegOf(work, 'ffmpeg -f concat -i good.txt -c copy {{out_x}}')
    t.equal(joined.code, 0, joined.stderr)
    t.ok((await probeDuration(join(work, 'outputs', 'out.mkv'))) > 1.9)
    const dash = await ffmpegOf(work, 'ffmpeg -i dash/good.mpd -c copy {{out_x}}')
    t.equal(dash.code, 0, dash.stderr)
    t.ok((await probeDuration(join(work, 'outputs', 'out.mkv'))) > 1.9)
  })

  // [name, command, what ffmpeg says]
  const refused: Array<[string, string, RegExp]> = [
    ['an HLS entry without a media extension (/etc/passwd)', 'ffmpeg -i passwd.m3u8 -c copy {{out_x}}', /Invalid data|not a common multimedia extension/],
    ['an HLS entry naming a protocol', 'ffmpeg -i proto.m3u8 -c copy {{out_x}}', /Invalid data|whitelist/],
    ['an HLS segment that is an AVI (no GAB2 in a playlist)', 'ffmpeg -i avi.m3u8 -c copy {{out_x}}', /whitelist|Invalid data|Could not find|Failed/],
    ['a concat entry at an absolute path', 'ffmpeg -f concat -i abs.txt -c copy {{out_x}}', /Operation not permitted|Unsafe/],
    ['a concat entry climbing out with ..', 'ffmpeg -f concat -i up.txt -c copy {{out_x}}', /Operation not permitted|Unsafe/],
    ['a concat option directive', 'ffmpeg -f concat -i option.txt -c copy {{out_x}}', /Invalid data|not allowed if safe/],
    ['a DASH segment without a media extension (/etc/passwd)', 'ffmpeg -i dash/passwd.mpd -c copy {{out_x}}', /not a common multimedia extension/],
    ['a DASH BaseURL at an http URL', 'ffmpeg -i dash/http.mpd -c copy {{out_x}}', /Invalid data|whitelist|Protocol not found/],
    ['a DASH segment that is a concat list', 'ffmpeg -i dash/concat.mpd -c copy {{out_x}}', /not on whitelist/],
    // 8.1's HLS probe no longer takes a playlist not named .m3u8; the whitelist would refuse it anyway.
    ['a DASH segment that is an HLS playlist', 'ffmpeg -i dash/hls.mpd -c copy {{out_x}}', /not on whitelist|Not detecting m3u8\/hls with non standard extension/],
  ]
  for (const [name, command, said] of refused) {
    t.test(`refuses ${name}`, async (t) => {
      const result = await ffmpegOf(work, command)
      t.not(result.code, 0)
      t.match(result.stderr, said)
    })
  }

  t.test('a movie source gets the -i whitelists: a concat list it opens is refused', async (t) => {
    const result = await ffmpegOf(work, "ffmpeg -i a.mkv -filter_complex 'amovie=good.txt[m];[0:a][m]amix' {{out_x}}")
    t.not(result.code, 0)
    t.match(result.stderr, /Failed to avformat_open_input 'good.txt'/)
  })

  t.test('ffmpeg alone still reads an absolute .ts segment of a DASH manifest, which is why the runner reads manifests first (control)', async (t) => {
    const result = await ffmpegOf(work, 'ffmpeg -i dash/abs.mpd -c copy {{out_x}}')
    t.equal(result.code, 0, result.stderr)
    t.ok((await probeDuration(join(work, 'outputs', 'out.mkv'))) > 0.9)
  })

  t.test('ffmpeg alone still reads an absolute .ts entry of a playlist, which is why the runner reads playlists first (control)', async (t) => {
    const result = await ffmpegOf(work, 'ffmpeg -i abs.m3u8 -c copy {{out_x}}')
    t.equal(result.code, 0, result.stderr)
    t.ok((await probeDuration(join(work, 'outputs', 'out.mkv'))) > 0.9)
  })
})
