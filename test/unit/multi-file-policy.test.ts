/**
 * The argument policy for outputs of many files (issue 28 item 2): numbered
 * sequences, hls, dash, segment and tee, each file they name kept inside the
 * output's own folder `outputs/<alias>/`, and the hostile forms refused with
 * a message naming the argument.
 */
import t from 'tap'
import { planFfmpegCommands } from '../../contracts/ffmpeg-plan.js'
import { applyFfmpegPolicy, INPUT_HARDENING, LEADING_OPTIONS, type PolicyContext } from '../../contracts/ffmpeg-policy.js'
import { inputPathsFor } from '../../contracts/ffmpeg-paths.js'
import { compareNames, isFolderOutput, mainMember, sequencePatternProblem } from '../../contracts/output-patterns.js'
import { filenameProblem } from '../../contracts/placeholders.js'
import { isConfinedPlaylist } from '../../contracts/playlist-entries.js'
import { parseTeeSlaves } from '../../contracts/tee-slaves.js'

const inputs = inputPathsFor({ in_video: 'https://media.example.com/clip.mp4' })
const outputs = {
  out_thumbs: 'thumb_%03d.jpg',
  out_hls: 'playlist.m3u8',
  out_ladder: 'stream_%v.m3u8',
  out_dash: 'manifest.mpd',
  out_parts: 'part_%03d.mp4',
  out_video: 'result.mp4',
}
const context: PolicyContext = { mode: 'ffmpeg', inputs, outputs }
const H = INPUT_HARDENING
const L = LEADING_OPTIONS
const IN = [...H, '-i', 'inputs/in_video.mp4']

// [name, command, argv after the input, folders]
const accepted: Array<[string, string, string[], Record<string, string>]> = [
  ['a numbered thumbnail sequence', 'ffmpeg -i {{in_video}} -vf fps=1 {{out_thumbs}}', ['-vf', 'fps=1', 'outputs/out_thumbs/thumb_%03d.jpg'], { out_thumbs: 'thumb_%03d.jpg' }],
  ['a sequence named by its declared filename', 'ffmpeg -i {{in_video}} -vf fps=1 thumb_%03d.jpg', ['-vf', 'fps=1', 'outputs/out_thumbs/thumb_%03d.jpg'], { out_thumbs: 'thumb_%03d.jpg' }],
  [
    'hls with its segments named into the output folder',
    'ffmpeg -i {{in_video}} -f hls -hls_time 1 -hls_playlist_type vod -hls_segment_filename seg_%03d.ts {{out_hls}}',
    ['-f', 'hls', '-hls_time', '1', '-hls_playlist_type', 'vod', '-hls_segment_filename', 'outputs/out_hls/seg_%03d.ts', 'outputs/out_hls/playlist.m3u8'],
    { out_hls: 'playlist.m3u8' },
  ],
  ['hls guessed from .m3u8', 'ffmpeg -i {{in_video}} -hls_time 2 {{out_hls}}', ['-hls_time', '2', 'outputs/out_hls/playlist.m3u8'], { out_hls: 'playlist.m3u8' }],
  [
    'an hls ladder with var_stream_map and a master playlist',
    "ffmpeg -i {{in_video}} -map 0:v -map 0:v -s:v:0 1280x720 -s:v:1 640x360 -f hls -var_stream_map 'v:0,name:720p v:1,name:360p' -master_pl_name master.m3u8 -hls_segment_filename seg_%v_%03d.ts -hls_flags independent_segments+program_date_time {{out_ladder}}",
    ['-map', '0:v', '-map', '0:v', '-s:v:0', '1280x720', '-s:v:1', '640x360', '-f', 'hls', '-var_stream_map', 'v:0,name:720p v:1,name:360p', '-master_pl_name', 'master.m3u8',
      '-hls_segment_filename', 'outputs/out_ladder/seg_%v_%03d.ts', '-hls_flags', 'independent_segments+program_date_time', 'outputs/out_ladder/stream_%v.m3u8'],
    { out_ladder: 'master.m3u8' },
  ],
  [
    'dash with segment templates',
    'ffmpeg -i {{in_video}} -f dash -seg_duration 1 -init_seg_name init_$RepresentationID$.$ext$ -media_seg_name chunk_$RepresentationID$_$Number%05d$.$ext$ {{out_dash}}',
    ['-f', 'dash', '-seg_duration', '1', '-init_seg_name', 'init_$RepresentationID$.$ext$', '-media_seg_name', 'chunk_$RepresentationID$_$Number%05d$.$ext$', 'outputs/out_dash/manifest.mpd'],
    { out_dash: 'manifest.mpd' },
  ],
  [
    'segment with a segment list',
    'ffmpeg -i {{in_video}} -c copy -f segment -segment_time 1 -reset_timestamps 1 -segment_list parts.m3u8 -segment_format mp4 {{out_parts}}',
    ['-c', 'copy', '-f', 'segment', '-segment_time', '1', '-reset_timestamps', '1', '-segment_list', 'outputs/out_parts/parts.m3u8', '-segment_format', 'mp4', 'outputs/out_parts/part_%03d.mp4'],
    { out_parts: 'part_%03d.mp4' },
  ],
  [
    'tee with two work-dir slaves',
    "ffmpeg -i {{in_video}} -map 0 -f tee '[f=mp4:movflags=+faststart]{{out_video}}|[f=hls:hls_time=1:hls_segment_filename=seg_%03d.ts]{{out_hls}}'",
    ['-map', '0', '-f', 'tee', '[f=mp4:movflags=+faststart]outputs/result.mp4|[f=hls:hls_time=1:hls_segment_filename=outputs/out_hls/seg_%03d.ts]outputs/out_hls/playlist.m3u8'],
    { out_hls: 'playlist.m3u8' },
  ],
  ['a single-file output keeps its place', 'ffmpeg -i {{in_video}} {{out_video}}', ['outputs/result.mp4'], {}],
]

t.test('accepts multi-file outputs and writes every file into the output’s own folder', async (t) => {
  for (const [name, command, rest, folders] of accepted) {
    const outcome = applyFfmpegPolicy(command, context)
    t.ok(outcome.ok, name)
    if (!outcome.ok) {
      t.fail(outcome.violation.message)
      continue
    }
    t.same(outcome.value.argv, [...L, ...IN, ...rest], `${name}: argv`)
    t.same(Object.fromEntries(outcome.value.folders), folders, `${name}: folders and main files`)
  }
})

t.test('the plan reports each folder output with its main file', async (t) => {
  const plan = planFfmpegCommands(['ffmpeg -i {{in_video}} -vf fps=1 {{out_thumbs}} -f hls -master_pl_name main.m3u8 {{out_hls}}'], { mode: 'ffmpeg', inputs, outputs: { out_thumbs: 'thumb_%03d.jpg', out_hls: 'playlist.m3u8' } })
  t.ok(plan.ok)
  if (plan.ok) t.same(plan.folders, { out_thumbs: 'thumb_%03d.jpg', out_hls: 'main.m3u8' })
})

// [name, command, code, message fragment]
const hostile: Array<[string, string, string, RegExp]> = [
  ['a pattern leaving the work dir', 'ffmpeg -i {{in_video}} ../x_%d.jpg', 'OUTPUT_NOT_ALLOWED', /leaving the work directory/],
  ['an absolute playlist', 'ffmpeg -i {{in_video}} -f hls /tmp/x.m3u8', 'OUTPUT_NOT_ALLOWED', /absolute paths/],
  ['hls segments at an absolute path', 'ffmpeg -i {{in_video}} -f hls -hls_segment_filename /tmp/s%d.ts {{out_hls}}', 'VALUE_NOT_ALLOWED', /-hls_segment_filename \/tmp\/s%d.ts: the value must be a plain file name/],
  ['hls segments up a directory', 'ffmpeg -i {{in_video}} -f hls -hls_segment_filename ..%d.ts {{out_hls}}', 'VALUE_NOT_ALLOWED', /must not contain "\.\."/],
  ['a segment list through a protocol', 'ffmpeg -i {{in_video}} -f segment -segment_list file:/x {{out_parts}}', 'VALUE_NOT_ALLOWED', /-segment_list file:\/x: the value must be a plain file name/],
  ['a tee slave outside the work dir', "ffmpeg -i {{in_video}} -f tee '[f=mp4]/tmp/x.mp4|[f=hls]{{out_hls}}'", 'OUTPUT_NOT_ALLOWED', /\/tmp\/x.mp4: absolute paths/],
  ['a tee slave with a protocol', "ffmpeg -i {{in_video}} -f tee '[f=mp4]tcp://10.0.0.1:9|{{out_video}}'", 'OUTPUT_NOT_ALLOWED', /protocols/],
  ['a tee slave whose segments escape', "ffmpeg -i {{in_video}} -f tee '[f=hls:hls_segment_filename=/tmp/s%d.ts]{{out_hls}}'", 'VALUE_NOT_ALLOWED', /plain file name/],
  ['a tee with escapes', "ffmpeg -i {{in_video}} -f tee '[f=mp4]a\\|b.mp4'", 'OUTPUT_NOT_ALLOWED', /backslashes/],
  ['a tee slave through the fifo muxer', "ffmpeg -i {{in_video}} -f tee '[f=mp4:use_fifo=1]{{out_video}}'", 'OPTION_NOT_ALLOWED', /use_fifo/],
  ['a tee slave that is a tee', "ffmpeg -i {{in_video}} -f tee '[f=tee]{{out_video}}'", 'FORMAT_NOT_ALLOWED', /tee itself/],
  ['a tee slave of a refused format', "ffmpeg -i {{in_video}} -f tee '[f=fifo]{{out_video}}'", 'FORMAT_NOT_ALLOWED', /-f fifo is not an allowed output format/],
  ['an hls key info file', 'ffmpeg -i {{in_video}} -f hls -hls_key_info_file {{in_video}} {{out_hls}}', 'OPTION_NOT_ALLOWED', /-hls_key_info_file is not allowed: it reads a key info file/],
  ['an hls key info file in a tee slave', "ffmpeg -i {{in_video}} -f tee '[f=hls:hls_key_info_file=k.info]{{out_hls}}'", 'OPTION_NOT_ALLOWED', /hls_key_info_file is not allowed/],
  ['strftime segment names', 'ffmpeg -i {{in_video}} -f segment -strftime 1 {{out_parts}}', 'OPTION_NOT_ALLOWED', /strftime/],
  ['a master playlist in another directory', 'ffmpeg -i {{in_video}} -f hls -master_pl_name ../m.m3u8 {{out_hls}}', 'VALUE_NOT_ALLOWED', /plain file name/],
  ['a dash template leaving the folder', 'ffmpeg -i {{in_video}} -f dash -media_seg_name ../$Number$.m4s {{out_dash}}', 'VALUE_NOT_ALLOWED', /plain file name/],
  ['a dash template with an unknown identifier', 'ffmpeg -i {{in_video}} -f dash -init_seg_name $Home$.mp4 {{out_dash}}', 'VALUE_NOT_ALLOWED', /plain file name/],
  ['a base URL that points into the host', 'ffmpeg -i {{in_video}} -f hls -hls_base_url /etc/ {{out_hls}}', 'VALUE_NOT_ALLOWED', /http\(s\) URL or a relative path/],
  ['a base URL of another protocol', 'ffmpeg -i {{in_video}} -f hls -hls_base_url file:///etc/ {{out_hls}}', 'VALUE_NOT_ALLOWED', /http\(s\) URL/],
  ['a var_stream_map name that is a path', "ffmpeg -i {{in_video}} -f hls -var_stream_map 'v:0,name:../x' {{out_ladder}}", 'VALUE_NOT_ALLOWED', /is not a variant entry/],
  ['an hls flag outside the list', 'ffmpeg -i {{in_video}} -f hls -hls_flags periodic_rekey {{out_hls}}', 'VALUE_NOT_ALLOWED', /flag periodic_rekey is not allowed/],
  ['hls options passed to the segment muxer', 'ffmpeg -i {{in_video}} -f hls -hls_segment_options movflags=x {{out_hls}}', 'OPTION_NOT_ALLOWED', /unchecked/],
  ['a segment format that is itself multi-file', 'ffmpeg -i {{in_video}} -f segment -segment_format hls {{out_parts}}', 'VALUE_NOT_ALLOWED', /single-file format/],
  ['an hls option on an mp4 output', 'ffmpeg -i {{in_video}} -hls_time 1 {{out_video}}', 'OPTION_NOT_ALLOWED', /-hls_time applies to -f hls outputs only/],
  ['an hls option before an input', 'ffmpeg -hls_time 1 -i {{in_video}} {{out_hls}}', 'OPTION_NOT_ALLOWED', /output option/],
  ['hls into an undeclared file of a chain', 'ffmpeg -i {{in_video}} -f hls x.m3u8', 'OUTPUT_NOT_ALLOWED', /not a declared output/],
  ['a segment header at a path of its own', 'ffmpeg -i {{in_video}} -f segment -segment_header_filename h.mp4 {{out_parts}}', 'OPTION_NOT_ALLOWED', /header file/],
]

t.test('refuses hostile multi-file outputs with a message naming the argument', async (t) => {
  for (const [name, command, code, message] of hostile) {
    const outcome = applyFfmpegPolicy(command, context)
    t.notOk(outcome.ok, `refuses ${name}`)
    if (!outcome.ok) {
      t.equal(outcome.violation.code, code, `${name}: code (${outcome.violation.message})`)
      t.match(outcome.violation.message, message, `${name}: message`)
    }
  }
})

t.test('a chain may not write a multi-file muxer into an intermediate file', async (t) => {
  const plan = planFfmpegCommands(['ffmpeg -i {{in_video}} -f hls x.m3u8', 'ffmpeg -i {{in_video}} {{out_video}}'], { mode: 'ffmpeg', inputs, outputs: { out_video: 'r.mp4' } })
  t.notOk(plan.ok)
  if (!plan.ok) t.match(plan.violation.message, /hls muxer writes many files, so its output must be declared in output_files/)
})

t.test('a declared filename may hold only the sequences ffmpeg expands', async (t) => {
  const cases: Array<[string, boolean]> = [
    ['thumb_%03d.jpg', true], ['img%d.png', true], ['stream_%v.m3u8', true], ['100%%.mp4', true], ['seg_%v_%05d.ts', true],
    ['x_%s.mp4', false], ['x_%n.jpg', false], ['%Y-%m-%d.ts', false], ['100%.mp4', false], ['x_%x.jpg', false], ['%', false],
  ]
  for (const [name, ok] of cases) {
    t.equal(sequencePatternProblem(name) === null, ok, `${name}: ${ok ? 'allowed' : 'refused'}`)
    t.equal(filenameProblem(name) === null, ok, `${name}: the API's filename rule agrees`)
  }
})

t.test('folder outputs are told apart by their filename alone', async (t) => {
  t.ok(isFolderOutput('thumb_%03d.jpg'))
  t.ok(isFolderOutput('playlist.m3u8'))
  t.ok(isFolderOutput('manifest.MPD'))
  t.notOk(isFolderOutput('result.mp4'))
  t.notOk(isFolderOutput('thumb.jpg'))
})

t.test('the main file is the first match of its name or pattern, numbers compared as numbers', async (t) => {
  t.equal(mainMember(['thumb_10.jpg', 'thumb_2.jpg', 'thumb_1.jpg'], 'thumb_%d.jpg'), 'thumb_1.jpg')
  t.equal(mainMember(['playlist0.ts', 'playlist.m3u8', 'playlist1.ts'], 'playlist.m3u8'), 'playlist.m3u8')
  t.equal(mainMember(['seg_720p_000.ts', 'stream_720p.m3u8', 'master.m3u8', 'stream_360p.m3u8'], 'master.m3u8'), 'master.m3u8')
  t.equal(mainMember(['stream_1.m3u8', 'stream_0.m3u8', 'stream_0_0.ts'], 'stream_%v.m3u8'), 'stream_0.m3u8')
  t.equal(mainMember(['b.bin', 'a.bin'], 'nothing.m3u8'), 'a.bin', 'no match: the first file')
  t.equal(mainMember([], 'x'), null)
  t.ok(compareNames('seg_2.ts', 'seg_10.ts') < 0)
})

t.test('tee slaves are split as ffmpeg splits the plain form', async (t) => {
  t.same(parseTeeSlaves('[f=mp4:movflags=+faststart]a.mp4|b.mkv|[]c.ts'), [
    { options: [['f', 'mp4'], ['movflags', '+faststart']], target: 'a.mp4' },
    { options: [], target: 'b.mkv' },
    { options: [], target: 'c.ts' },
  ])
  t.throws(() => parseTeeSlaves("[f=mp4]'a|b'.mp4"), /quotes/)
  t.throws(() => parseTeeSlaves('[f=mp4a.mp4'), /end with \]/)
  t.throws(() => parseTeeSlaves('[f]a.mp4'), /key=value/)
  t.throws(() => parseTeeSlaves('a.mp4|'), /names no output/)
})

t.test('a command that only discards to -f null - still writes an output', async (t) => {
  const outcome = applyFfmpegPolicy('ffmpeg -i {{in_video}} -f null -', context)
  t.ok(outcome.ok)
  if (outcome.ok) t.same(outcome.value.argv.slice(-3), ['-f', 'null', '-'])
})

t.test('an HLS playlist is read with the hls demuxer only when every entry is a plain name beside it', async (t) => {
  t.ok(isConfinedPlaylist('#EXTM3U\n#EXT-X-VERSION:3\n#EXTINF:1.0,\nseg_000.ts\n#EXT-X-MAP:URI="init.mp4"\n#EXT-X-ENDLIST\n'))
  t.ok(isConfinedPlaylist('#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1\nstream_720p.m3u8\n'))
  for (const entry of ['/etc/passwd', '../x.ts', 'file:x.ts', 'http://h/x.ts', 'concat:a.ts|b.ts', 'a\\b.ts', '%2e%2e/x.ts', 'x.ts?y', '.hidden.ts', 'a//b.ts']) {
    t.notOk(isConfinedPlaylist(`#EXTM3U\n#EXTINF:1,\n${entry}\n`), entry)
  }
  t.notOk(isConfinedPlaylist('#EXTM3U\n#EXT-X-KEY:METHOD=AES-128,URI="/etc/key"\nseg.ts\n'), 'a key URI outside')
  t.notOk(isConfinedPlaylist('seg.ts\n'), 'not a playlist')
})
