import t from 'tap'
import { applyFfmpegPolicy, type PolicyContext } from '../../contracts/ffmpeg-policy.js'
import { CONCAT_HARDENING, DASH_HARDENING, HLS_HARDENING, INPUT_HARDENING, SEQUENCE_HARDENING } from '../../contracts/ffmpeg-inputs.js'
import { inputPathsFor } from '../../contracts/ffmpeg-paths.js'
import { folderPathProblem, sequenceNameMatcher, type WorkFileCheck } from '../../contracts/ffmpeg-work-files.js'

const inputs = inputPathsFor({ in_video: 'https://media.example.com/clip.mp4', in_list: 'https://media.example.com/list.txt', in_hls: 'https://media.example.com/a/index.m3u8' })
const plain: PolicyContext = { mode: 'ffmpeg', inputs, outputs: { out_video: 'result.mp4' } }
const folder: PolicyContext = { ...plain, folder: true }

/** The argv between the leading options and the output, and the checks, of an accepted command. */
function accepted(command: string, context: PolicyContext): { argv: string[]; checks: WorkFileCheck[] } | string {
  const outcome = applyFfmpegPolicy(command, context)
  if (!outcome.ok) return `${outcome.violation.code}: ${outcome.violation.message}`
  return { argv: outcome.value.argv.slice(3, -1), checks: outcome.value.checks }
}

// [name, command, context, argv before the output, checks]
const readings: Array<[string, string, PolicyContext, string[], WorkFileCheck[]]> = [
  ['reads a folder entry by its relative path', 'ffmpeg -i clips/a.mp4 {{out_video}}', folder,
    [...INPUT_HARDENING, '-i', 'clips/a.mp4'], [{ kind: 'file', path: 'clips/a.mp4', argument: '-i clips/a.mp4' }]],
  ['reads an entry at the folder root', 'ffmpeg -i intro.mp4 {{out_video}}', folder,
    [...INPUT_HARDENING, '-i', 'intro.mp4'], [{ kind: 'file', path: 'intro.mp4', argument: '-i intro.mp4' }]],
  ['reads a numbered image sequence as image2 with the sequence pattern type', 'ffmpeg -framerate 10 -start_number 1 -i frames/img_%03d.png {{out_video}}', folder,
    ['-framerate', '10', '-start_number', '1', ...SEQUENCE_HARDENING, '-i', 'frames/img_%03d.png'], [{ kind: 'sequence', path: 'frames/img_%03d.png', argument: '-i frames/img_%03d.png' }]],
  ['reads a sequence with a forced -f image2', 'ffmpeg -f image2 -i f%d.jpg {{out_video}}', folder,
    ['-f', 'image2', ...SEQUENCE_HARDENING, '-i', 'f%d.jpg'], [{ kind: 'sequence', path: 'f%d.jpg', argument: '-i f%d.jpg' }]],
  ['reads a concat list of the folder with -safe 1 and concat whitelisted for it alone', 'ffmpeg -f concat -i lists/all.txt -c copy {{out_video}}', folder,
    ['-f', 'concat', ...CONCAT_HARDENING, '-i', 'lists/all.txt', '-c', 'copy'], [{ kind: 'concat', path: 'lists/all.txt', argument: '-f concat -i lists/all.txt' }]],
  ['reads a concat list fetched as an input', 'ffmpeg -f concat -i {{in_list}} -c copy {{out_video}}', plain,
    ['-f', 'concat', ...CONCAT_HARDENING, '-i', 'inputs/in_list.txt', '-c', 'copy'], [{ kind: 'concat', path: 'inputs/in_list.txt', argument: '-f concat -i {{in_list}}' }]],
  ['reads a .m3u8 entry as HLS with the picky extension options', 'ffmpeg -i hls/index.m3u8 -c copy {{out_video}}', folder,
    [...HLS_HARDENING, '-i', 'hls/index.m3u8', '-c', 'copy'], [{ kind: 'hls', path: 'hls/index.m3u8', argument: '-i hls/index.m3u8' }]],
  ['reads a playlist forced with -f hls', 'ffmpeg -f hls -i {{in_hls}} -c copy {{out_video}}', plain,
    ['-f', 'hls', ...HLS_HARDENING, '-i', 'inputs/in_hls.m3u8', '-c', 'copy'], [{ kind: 'hls', path: 'inputs/in_hls.m3u8', argument: '-i {{in_hls}}' }]],
  ['reads a .mpd entry as DASH with media-only extensions and segment demuxers, as a file: URL', 'ffmpeg -i dash/manifest.mpd -c copy {{out_video}}', folder,
    [...DASH_HARDENING, '-i', 'file:dash/manifest.mpd', '-c', 'copy'], [{ kind: 'dash', path: 'dash/manifest.mpd', argument: '-i dash/manifest.mpd' }]],
  ['reads a manifest forced with -f dash, whatever its name', 'ffmpeg -f dash -i dash/manifest.xml -c copy {{out_video}}', folder,
    ['-f', 'dash', ...DASH_HARDENING, '-i', 'file:dash/manifest.xml', '-c', 'copy'], [{ kind: 'dash', path: 'dash/manifest.xml', argument: '-i dash/manifest.xml' }]],
  ['keeps the alias rule for inputs when a folder comes too', 'ffmpeg -i {{in_video}} -i logo.png -filter_complex overlay {{out_video}}', folder,
    [...INPUT_HARDENING, '-i', 'inputs/in_video.mp4', ...INPUT_HARDENING, '-i', 'logo.png', '-filter_complex', 'overlay'], [{ kind: 'file', path: 'logo.png', argument: '-i logo.png' }]],
]

for (const [name, command, context, argv, checks] of readings) {
  t.test(name, async (t) => {
    t.same(accepted(command, context), { argv, checks })
  })
}

t.test('reads a numbered sequence an earlier command of the chain wrote as image2 with the sequence pattern type', async (t) => {
  const written = new Map([['thumb_%03d.jpg', 'thumb_%03d.jpg']])
  t.same(accepted('ffmpeg -framerate 2 -i thumb_%03d.jpg {{out_video}}', { ...plain, written }), {
    argv: ['-framerate', '2', ...SEQUENCE_HARDENING, '-i', 'thumb_%03d.jpg'], checks: [],
  })
  t.match(accepted('ffmpeg -f mjpeg -i thumb_%03d.jpg {{out_video}}', { ...plain, written }), /^FORMAT_NOT_ALLOWED: -f mjpeg -i thumb_%03d.jpg: a numbered sequence is read by -f image2 only/)
})

t.test('leaves every demuxer that opens other files out of the whitelist of a plain input', async (t) => {
  const whitelist = INPUT_HARDENING[INPUT_HARDENING.indexOf('-format_whitelist') + 1]?.split(',') ?? []
  for (const name of ['concat', 'hls', 'dash', 'image2pipe', 'sdp', 'rtsp', 'lavfi']) t.notOk(whitelist.includes(name), name)
  t.ok(CONCAT_HARDENING.includes('-safe') && CONCAT_HARDENING[CONCAT_HARDENING.indexOf('-safe') + 1] === '1')
  const hlsDemuxers = HLS_HARDENING[HLS_HARDENING.indexOf('-format_whitelist') + 1]?.split(',') ?? []
  t.notOk(hlsDemuxers.includes('avi'), 'no AVI segment, so no GAB2 subtitle hides a playlist')
  t.notOk(hlsDemuxers.includes('concat'))
  const dashDemuxers = DASH_HARDENING[DASH_HARDENING.indexOf('-format_whitelist') + 1]?.split(',') ?? []
  for (const name of ['avi', 'concat', 'hls']) t.notOk(dashDemuxers.includes(name), `no ${name} segment in a DASH manifest`)
  const dashExtensions = DASH_HARDENING[DASH_HARDENING.indexOf('-allowed_extensions') + 1]?.split(',') ?? []
  for (const name of ['mpd', 'm3u8', 'txt', '']) t.notOk(dashExtensions.includes(name), `no .${name} segment`)
})

// [name, command, context, code and message]
const refusals: Array<[string, string, PolicyContext, RegExp]> = [
  ['a folder path without a folder', 'ffmpeg -i clips/a.mp4 {{out_video}}', plain, /^INPUT_NOT_ALLOWED: -i clips\/a.mp4: paths are not allowed, only plain filenames/],
  ['a folder path climbing out', 'ffmpeg -i clips/../../etc/passwd {{out_video}}', folder, /^INPUT_NOT_ALLOWED: -i clips\/..\/..\/etc\/passwd: paths leaving the work directory are not allowed$/],
  ['an absolute path with a folder', 'ffmpeg -i /etc/passwd {{out_video}}', folder, /^INPUT_NOT_ALLOWED: -i \/etc\/passwd: absolute paths are not allowed$/],
  ['a protocol with a folder', 'ffmpeg -i file:clips/a.mp4 {{out_video}}', folder, /^INPUT_NOT_ALLOWED: -i file:clips\/a.mp4: protocols and URLs are not allowed$/],
  ['a hidden segment', 'ffmpeg -i clips/.secret.mp4 {{out_video}}', folder, /^INPUT_NOT_ALLOWED: -i clips\/.secret.mp4: ".secret.mp4": each part/],
  ['the runner\'s own state', 'ffmpeg -i .ffkube/spec.json {{out_video}}', folder, /^INPUT_NOT_ALLOWED: -i .ffkube\/spec.json: ".ffkube": each part/],
  ['a fetched input by path', 'ffmpeg -i inputs/in_video.mp4 {{out_video}}', folder, /^INPUT_NOT_ALLOWED: -i inputs\/in_video.mp4: inputs\/ holds the service's own files/],
  ['a declared output by path', 'ffmpeg -i outputs/result.mp4 {{out_video}}', folder, /^INPUT_NOT_ALLOWED: -i outputs\/result.mp4: outputs\/ holds/],
  ['an empty path part', 'ffmpeg -i clips//a.mp4 {{out_video}}', folder, /^INPUT_NOT_ALLOWED: -i clips\/\/a.mp4: "": each part/],
  ['a glob pattern type', 'ffmpeg -pattern_type glob -i "frames/*.png" {{out_video}}', folder, /^OPTION_NOT_ALLOWED: option -pattern_type is not allowed/],
  ['a glob character in a path', 'ffmpeg -i "frames/*.png" {{out_video}}', folder, /^INPUT_NOT_ALLOWED: -i frames\/\*.png: "\*.png": each part/],
  ['two numbers in a sequence', 'ffmpeg -i f%d_%d.png {{out_video}}', folder, /^INPUT_NOT_ALLOWED: -i f%d_%d.png: a numbered sequence has exactly one %d/],
  ['a number in a directory name', 'ffmpeg -i d%02d/f.png {{out_video}}', folder, /^INPUT_NOT_ALLOWED: -i d%02d\/f.png: a numbered sequence has exactly one %d or %0Nd \(N from 1 to 9\), in the last part/],
  ['a string conversion in a sequence', 'ffmpeg -i f%s.png {{out_video}}', folder, /^INPUT_NOT_ALLOWED: -i f%s.png: a numbered sequence/],
  ['a sequence read by another demuxer', 'ffmpeg -f mjpeg -i f%03d.jpg {{out_video}}', folder, /^FORMAT_NOT_ALLOWED: -f mjpeg -i f%03d.jpg: a numbered sequence is read by -f image2 only/],
  ['-safe 0 from the user', 'ffmpeg -f concat -safe 0 -i list.txt {{out_video}}', folder, /^OPTION_NOT_ALLOWED: option -safe is not allowed/],
  ['HLS options from the user', 'ffmpeg -allowed_extensions ALL -i a.m3u8 {{out_video}}', folder, /^OPTION_NOT_ALLOWED: option -allowed_extensions is not allowed/],
  ['DASH options from the user', 'ffmpeg -allowed_extensions ALL -i a.mpd {{out_video}}', folder, /^OPTION_NOT_ALLOWED: option -allowed_extensions is not allowed/],
  ['a DASH manifest at an absolute path', 'ffmpeg -f dash -i /tmp/a.mpd {{out_video}}', folder, /^INPUT_NOT_ALLOWED: -i \/tmp\/a.mpd: absolute paths/],
  ['a concat list at an absolute path', 'ffmpeg -f concat -i /tmp/list.txt {{out_video}}', folder, /^INPUT_NOT_ALLOWED: -i \/tmp\/list.txt: absolute paths/],
]

for (const [name, command, context, expected] of refusals) {
  t.test(`refuses ${name}`, async (t) => {
    t.match(accepted(command, context), expected)
  })
}

t.test('holds folder paths to safe parts, and image2 names to the numbers its sequence pattern reads', async (t) => {
  t.equal(folderPathProblem('a/b/c.mp4'), null)
  t.equal(folderPathProblem('A-1_b.c/d'), null)
  t.match(folderPathProblem(`${'a/'.repeat(40)}b`), /at most 32 parts/)
  t.match(folderPathProblem('a/-b'), /"-b"/)
  const three = sequenceNameMatcher('frames/img_%03d.png')
  t.ok(three.test('img_001.png'))
  t.ok(three.test('img_1000.png'))
  t.notOk(three.test('img_01.png'))
  t.notOk(three.test('img_001.png.bak'))
  const any = sequenceNameMatcher('f%d.jpg')
  t.ok(any.test('f7.jpg'))
  t.notOk(any.test('fx.jpg'))
})
