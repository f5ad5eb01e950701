import t from 'tap'
import { planFfmpegCommands } from '../../contracts/ffmpeg-plan.js'
import { applyFfmpegPolicy, INPUT_HARDENING, LEADING_OPTIONS, type PolicyContext } from '../../contracts/ffmpeg-policy.js'
import { inputPathsFor } from '../../contracts/ffmpeg-paths.js'

const inputs = inputPathsFor({
  in_video: 'https://media.example.com/clip.mp4',
  in_logo: 'https://media.example.com/logo.PNG',
  in_audio: 'https://media.example.com/a/b/track',
})
const outputs = { out_video: 'result.mp4', out_gif: 'anim.gif', out_thumb: 'thumb.jpg', out_audio: 'sound.mp3' }
const context: PolicyContext = { mode: 'ffmpeg', inputs, outputs }

const H = INPUT_HARDENING
const L = LEADING_OPTIONS

t.test('derives input paths from the alias and the URL extension', async (t) => {
  t.same(inputs, { in_video: 'inputs/in_video.mp4', in_logo: 'inputs/in_logo.png', in_audio: 'inputs/in_audio' })
})

// [name, command, code, message fragment]
const hostile: Array<[string, string, string, RegExp]> = [
  ['an absolute input path', 'ffmpeg -i /etc/passwd {{out_video}}', 'INPUT_NOT_ALLOWED', /-i \/etc\/passwd: absolute paths/],
  ['a file: URL input', 'ffmpeg -i file:/etc/passwd {{out_video}}', 'INPUT_NOT_ALLOWED', /protocols and URLs/],
  ['a concat: protocol input', "ffmpeg -i 'concat:a.mp4|/etc/passwd' {{out_video}}", 'INPUT_NOT_ALLOWED', /protocols/],
  ['a subfile: protocol input', 'ffmpeg -i subfile,,start,0,end,0,,:/etc/passwd {{out_video}}', 'INPUT_NOT_ALLOWED', /-i subfile/],
  ['an http input to the metadata service', 'ffmpeg -i http://169.254.169.254/latest/meta-data/ {{out_video}}', 'INPUT_NOT_ALLOWED', /protocols/],
  ['a tcp input', 'ffmpeg -i tcp://10.0.0.1:80 {{out_video}}', 'INPUT_NOT_ALLOWED', /protocols/],
  ['a pipe: input', 'ffmpeg -i pipe:0 {{out_video}}', 'INPUT_NOT_ALLOWED', /protocols/],
  ['a data: input', 'ffmpeg -i data:text/plain,abc {{out_video}}', 'INPUT_NOT_ALLOWED', /protocols/],
  ['standard input', 'ffmpeg -i - {{out_video}}', 'INPUT_NOT_ALLOWED', /standard input/],
  ['a relative input path leaving the work dir', 'ffmpeg -i ../secret.mp4 {{out_video}}', 'INPUT_NOT_ALLOWED', /leaving the work directory/],
  ['a plain input no command wrote', 'ffmpeg -i other.mp4 {{out_video}}', 'INPUT_NOT_ALLOWED', /no earlier command wrote/],
  ['an undeclared input alias', 'ffmpeg -i {{in_nope}} {{out_video}}', 'UNKNOWN_PLACEHOLDER', /in_nope is not a declared input/],
  ['an output alias read before it is written', 'ffmpeg -i {{out_video}} {{out_gif}}', 'INPUT_NOT_ALLOWED', /out_video is read before/],
  ['-f concat on an absolute path', 'ffmpeg -f concat -i /etc/list.txt {{out_video}}', 'INPUT_NOT_ALLOWED', /-i \/etc\/list.txt: absolute paths/],
  ['-f hls on a file no command wrote', 'ffmpeg -f hls -i list.m3u8 {{out_video}}', 'INPUT_NOT_ALLOWED', /-i list.m3u8: no earlier command wrote/],
  ['-f dash on a file no command wrote', 'ffmpeg -f dash -i manifest.mpd {{out_video}}', 'INPUT_NOT_ALLOWED', /-i manifest.mpd: no earlier command wrote/],
  ['an image sequence without a folder', 'ffmpeg -i img_%03d.png {{out_video}}', 'INPUT_NOT_ALLOWED', /patterns \(%d, %03d, %v\) are allowed only in output_files filenames \(a numbered sequence reads the entries of an input_compressed_folder\)/],
  ['-f lavfi on an input', 'ffmpeg -f lavfi -i {{in_video}} {{out_video}}', 'FORMAT_NOT_ALLOWED', /lavfi/],
  ['-f tee with a slave outside the work dir', "ffmpeg -i {{in_video}} -f tee '[f=mp4]/tmp/x.mp4|out.mp4'", 'OUTPUT_NOT_ALLOWED', /output \/tmp\/x.mp4: absolute paths/],
  ['-f segment on an output without a sequence', 'ffmpeg -i {{in_video}} -f segment {{out_video}}', 'OUTPUT_NOT_ALLOWED', /-f segment output's filename must hold a sequence/],
  ['-f hls on an output that is not a playlist', 'ffmpeg -i {{in_video}} -f hls {{out_video}}', 'OUTPUT_NOT_ALLOWED', /-f hls output's filename must end in .m3u8/],
  ['-f dash on an output that is not a manifest', 'ffmpeg -i {{in_video}} -f dash {{out_video}}', 'OUTPUT_NOT_ALLOWED', /-f dash output's filename must end in .mpd/],
  ['a movie= filter', "ffmpeg -i {{in_video}} -vf 'movie=/etc/passwd[x];[in][x]overlay' {{out_video}}", 'FILTER_OPTION_NOT_ALLOWED', /-vf: movie option filename \/etc\/passwd: absolute paths are not allowed/],
  ['an amovie filter in filter_complex', 'ffmpeg -i {{in_video}} -filter_complex amovie=/etc/passwd {{out_video}}', 'FILTER_OPTION_NOT_ALLOWED', /amovie option filename/],
  ['drawtext with textfile', 'ffmpeg -i {{in_video}} -vf drawtext=textfile=/etc/passwd {{out_video}}', 'FILTER_OPTION_NOT_ALLOWED', /textfile/],
  ['drawtext with fontfile', "ffmpeg -i {{in_video}} -vf \"drawtext=text=hi:fontfile='/etc/passwd'\" {{out_video}}", 'FILTER_OPTION_NOT_ALLOWED', /fontfile/],
  ['drawtext with a positional (fontfile) value', 'ffmpeg -i {{in_video}} -vf drawtext=/etc/passwd {{out_video}}', 'FILTER_OPTION_NOT_ALLOWED', /drawtext option fontfile \/etc\/passwd: absolute paths/],
  ['drawtext textfile hidden after a quoted scale', "ffmpeg -i {{in_video}} -vf \"scale='iw/2:ih/2',drawtext=text='a\\,b': textfile =/etc/passwd\" {{out_video}}", 'FILTER_OPTION_NOT_ALLOWED', /textfile/],
  ['a subtitles filter with a path', 'ffmpeg -i {{in_video}} -vf subtitles=/etc/passwd {{out_video}}', 'FILTER_OPTION_NOT_ALLOWED', /subtitles option filename \/etc\/passwd: absolute/],
  ['an ass filter on a file no command wrote', 'ffmpeg -i {{in_video}} -vf ass=x.ass {{out_video}}', 'FILTER_OPTION_NOT_ALLOWED', /ass option filename x.ass: no earlier command wrote this file/],
  ['lut3d', 'ffmpeg -i {{in_video}} -vf lut3d=/etc/x.cube {{out_video}}', 'FILTER_OPTION_NOT_ALLOWED', /lut3d option file \/etc\/x.cube: absolute/],
  ['curves with psfile', 'ffmpeg -i {{in_video}} -vf curves=psfile=/etc/passwd {{out_video}}', 'FILTER_OPTION_NOT_ALLOWED', /psfile/],
  ['sendcmd', "ffmpeg -i {{in_video}} -vf 'sendcmd=f=/etc/cmds,drawtext=text=a' {{out_video}}", 'FILTER_NOT_ALLOWED', /sendcmd/],
  ['zmq', 'ffmpeg -i {{in_video}} -vf zmq,scale=100:100 {{out_video}}', 'FILTER_NOT_ALLOWED', /zmq/],
  ['an escaped filter name', "ffmpeg -i {{in_video}} -vf 'mo\\vie=x' {{out_video}}", 'FILTER_OPTION_NOT_ALLOWED', /movie option filename x: no earlier command wrote/],
  ['an unterminated quote inside a filtergraph', "ffmpeg -i {{in_video}} -vf \"drawtext=text='abc\" {{out_video}}", 'FILTERGRAPH_SYNTAX', /unterminated quote/],
  ['-filter_script', 'ffmpeg -i {{in_video}} -filter_script /etc/graph {{out_video}}', 'OPTION_NOT_ALLOWED', /-filter_script/],
  ['-filter_complex_script', 'ffmpeg -i {{in_video}} -filter_complex_script x {{out_video}}', 'OPTION_NOT_ALLOWED', /filter_complex_script/],
  ['-/filter (option from a file)', 'ffmpeg -i {{in_video}} -/filter /etc/graph {{out_video}}', 'OPTION_NOT_ALLOWED', /-\/filter/],
  ['-pre', 'ffmpeg -i {{in_video}} -pre x {{out_video}}', 'OPTION_NOT_ALLOWED', /-pre is not allowed/],
  ['-fpre', 'ffmpeg -i {{in_video}} -fpre /etc/passwd {{out_video}}', 'OPTION_NOT_ALLOWED', /-fpre/],
  ['-attach', 'ffmpeg -i {{in_video}} -attach /etc/passwd {{out_video}}', 'OPTION_NOT_ALLOWED', /-attach/],
  ['-dump_attachment', 'ffmpeg -dump_attachment:t:0 /tmp/x -i {{in_video}} {{out_video}}', 'OPTION_NOT_ALLOWED', /-dump_attachment/],
  ['-progress to a URL', 'ffmpeg -progress http://10.0.0.1/ -i {{in_video}} {{out_video}}', 'OPTION_NOT_ALLOWED', /-progress/],
  ['-report', 'ffmpeg -report -i {{in_video}} {{out_video}}', 'OPTION_NOT_ALLOWED', /-report/],
  ['-protocol_whitelist from the user', 'ffmpeg -protocol_whitelist file,http,tcp -i {{in_video}} {{out_video}}', 'OPTION_NOT_ALLOWED', /protocol_whitelist/],
  ['-passlogfile', 'ffmpeg -i {{in_video}} -passlogfile /tmp/x {{out_video}}', 'OPTION_NOT_ALLOWED', /passlogfile/],
  ['-x264-params with a stats file', 'ffmpeg -i {{in_video}} -x264-params stats=/tmp/s {{out_video}}', 'OPTION_NOT_ALLOWED', /x264-params/],
  ['an absolute output path', 'ffmpeg -i {{in_video}} /tmp/x.mp4', 'OUTPUT_NOT_ALLOWED', /output \/tmp\/x.mp4: absolute paths/],
  ['an output leaving the work dir', 'ffmpeg -i {{in_video}} ../x.mp4', 'OUTPUT_NOT_ALLOWED', /leaving the work directory/],
  ['an output in a sub folder', 'ffmpeg -i {{in_video}} outputs/x.mp4', 'OUTPUT_NOT_ALLOWED', /only plain filenames/],
  ['an output URL', 'ffmpeg -i {{in_video}} -f mp4 http://10.0.0.1/upload', 'OUTPUT_NOT_ALLOWED', /protocols/],
  ['a file: output', 'ffmpeg -i {{in_video}} file:result.mp4', 'OUTPUT_NOT_ALLOWED', /protocols/],
  ['an undeclared output filename', 'ffmpeg -i {{in_video}} other.mp4', 'OUTPUT_NOT_ALLOWED', /not a declared output/],
  ['an output named like an option value escape', 'ffmpeg -i {{in_video}} .hidden.mp4', 'OUTPUT_NOT_ALLOWED', /must not start with \./],
  ['a dot-dot output', 'ffmpeg -i {{in_video}} ..', 'OUTPUT_NOT_ALLOWED', /output \.\./],
  ['an image pattern output', 'ffmpeg -i {{in_video}} frame%03d.png', 'OUTPUT_NOT_ALLOWED', /patterns/],
  ['stdout as output without -f null', 'ffmpeg -i {{in_video}} -f mp4 -', 'OUTPUT_NOT_ALLOWED', /standard input and output/],
  ['writing over an input alias', 'ffmpeg -i {{in_video}} {{in_logo}}', 'OUTPUT_NOT_ALLOWED', /an input cannot be written/],
  ['an undeclared output alias', 'ffmpeg -i {{in_video}} {{out_nope}}', 'UNKNOWN_PLACEHOLDER', /out_nope is not a declared output/],
  ['a placeholder embedded in a filter argument', "ffmpeg -i {{in_video}} -vf 'subtitles=x{{in_logo}}' {{out_video}}", 'PLACEHOLDER_NOT_WHOLE_ARGUMENT', /subtitles option filename=x\{\{in_logo\}\}: a placeholder must be the whole value/],
  ['a placeholder as an option value', 'ffmpeg -i {{in_video}} -metadata {{in_logo}} {{out_video}}', 'PLACEHOLDER_NOT_WHOLE_ARGUMENT', /may only name an input/],
  ['a placeholder glued to a prefix', 'ffmpeg -i file:{{in_video}} {{out_video}}', 'PLACEHOLDER_NOT_WHOLE_ARGUMENT', /whole argument/],
  ['an unknown option', 'ffmpeg -i {{in_video}} -headers X-A:1 {{out_video}}', 'OPTION_NOT_ALLOWED', /-headers/],
  ['-n next to the injected -y', 'ffmpeg -n -i {{in_video}} {{out_video}}', 'OPTION_NOT_ALLOWED', /-n is not allowed/],
  ['a trailing -f that would apply to nothing', 'ffmpeg -i {{in_video}} {{out_video}} -f concat', 'TRAILING_OPTIONS', /apply to nothing/],
  ['an option without its value', 'ffmpeg -i {{in_video}} {{out_video}} -c:v', 'MISSING_VALUE', /-c:v needs a value/],
  ['an unterminated quote', "ffmpeg -i {{in_video}} -vf 'scale=1:1 {{out_video}}", 'SHELL_SYNTAX', /unterminated single quote/],
  ['a command without the ffmpeg word', '-i {{in_video}} {{out_video}}', 'NOT_FFMPEG', /start with the word "ffmpeg"/],
  ['another program', 'sh -c id', 'NOT_FFMPEG', /ffmpeg/],
  ['ffprobe in place of ffmpeg', 'ffprobe {{in_video}}', 'NOT_FFMPEG', /ffmpeg/],
  ['-- ending option parsing', 'ffmpeg -i {{in_video}} -- /tmp/x.mp4', 'OPTION_NOT_ALLOWED', /option -- is not allowed/],
  ['-lavfi with amovie', "ffmpeg -i {{in_video}} -lavfi 'amovie=/etc/passwd' {{out_video}}", 'FILTER_OPTION_NOT_ALLOWED', /amovie option filename/],
  ['movie after a sws_flags prefix', "ffmpeg -i {{in_video}} -vf 'sws_flags=bicubic;movie=/etc/passwd' {{out_video}}", 'FILTER_OPTION_NOT_ALLOWED', /movie option filename/],
  ['a zmq listener', "ffmpeg -i {{in_video}} -vf 'zmq=bind_address=tcp\\://0.0.0.0\\:5555' {{out_video}}", 'FILTER_NOT_ALLOWED', /zmq/],
  ['drawtext textfile inside filter_complex', "ffmpeg -i {{in_video}} -filter_complex '[0:v]split[a][b];[a]drawtext=text=x:textfile=/etc/passwd[c]' -map '[c]' {{out_video}}", 'FILTER_OPTION_NOT_ALLOWED', /textfile/],
  ['a quoted filter name hiding options', "ffmpeg -i {{in_video}} -vf \"'drawtext=text=a:textfile'=/etc/passwd\" {{out_video}}", 'FILTERGRAPH_SYNTAX', /invalid filter name/],
  ['-f rtp to the network', 'ffmpeg -i {{in_video}} -f rtp rtp://10.0.0.1:5004', 'FORMAT_NOT_ALLOWED', /-f rtp/],
  ['paletteuse debug file', "ffmpeg -i {{in_video}} -i {{in_logo}} -filter_complex '[0][1]paletteuse=debug_kdtree=/tmp/k' {{out_gif}}", 'FILTER_OPTION_NOT_ALLOWED', /debug_kdtree/],
  ['-x264opts', 'ffmpeg -i {{in_video}} -x264opts stats=/tmp/s {{out_video}}', 'OPTION_NOT_ALLOWED', /x264opts/],
  ['an option glued to its value', 'ffmpeg -i {{in_video}} -c:v=libx264 {{out_video}}', 'OPTION_NOT_ALLOWED', /-c:v=libx264/],
  ['no input at all', 'ffmpeg -c:v libx264 {{out_video}}', 'NO_INPUT', /no input/],
  ['no output at all', 'ffmpeg -i {{in_video}}', 'NO_OUTPUT', /no output/],
]

t.test('refuses hostile commands', async (t) => {
  t.ok(hostile.length >= 30, `${hostile.length} hostile commands`)
  for (const [name, command, code, message] of hostile) {
    const outcome = applyFfmpegPolicy(command, context)
    t.notOk(outcome.ok, `refuses ${name}`)
    if (!outcome.ok) {
      t.equal(outcome.violation.code, code, `${name}: code`)
      t.match(outcome.violation.message, message, `${name}: message`)
    }
  }
})

// [name, command, expected argv after the leading options]
const legitimate: Array<[string, string, string[]]> = [
  ['a stream-copy remux', 'ffmpeg -i {{in_video}} -c copy {{out_video}}', [...H, '-i', 'inputs/in_video.mp4', '-c', 'copy', 'outputs/result.mp4']],
  ['a transcode with quality options and the angle placeholder form', 'ffmpeg -y -i <<in_video>> -c:v libx264 -preset veryfast -crf 23 -c:a aac -b:a 128k -movflags +faststart <<out_video>>',
    ['-y', ...H, '-i', 'inputs/in_video.mp4', '-c:v', 'libx264', '-preset', 'veryfast', '-crf', '23', '-c:a', 'aac', '-b:a', '128k', '-movflags', '+faststart', 'outputs/result.mp4']],
  ['a scale to 360p with quoted filter arguments', `ffmpeg -i {{in_video}} -vf "scale=-2:360:flags=lanczos,fps=30" -c:a copy {{out_video}}`,
    [...H, '-i', 'inputs/in_video.mp4', '-vf', 'scale=-2:360:flags=lanczos,fps=30', '-c:a', 'copy', 'outputs/result.mp4']],
  ['a trim with input seeking', 'ffmpeg -ss 00:00:01.5 -t 3 -i {{in_video}} -to 2 -c copy {{out_video}}',
    ['-ss', '00:00:01.5', '-t', '3', ...H, '-i', 'inputs/in_video.mp4', '-to', '2', '-c', 'copy', 'outputs/result.mp4']],
  ['multiple inputs with an overlay and maps', `ffmpeg -i {{in_video}} -i {{in_logo}} -filter_complex "[0:v][1:v]overlay=W-w-10:10[v]" -map "[v]" -map 0:a? -c:a copy {{out_video}}`,
    [...H, '-i', 'inputs/in_video.mp4', ...H, '-i', 'inputs/in_logo.png', '-filter_complex', '[0:v][1:v]overlay=W-w-10:10[v]', '-map', '[v]', '-map', '0:a?', '-c:a', 'copy', 'outputs/result.mp4']],
  ['a GIF with a generated palette', `ffmpeg -i {{in_video}} -filter_complex "fps=10,scale=320:-1:flags=lanczos,split[a][b];[a]palettegen=max_colors=64[p];[b][p]paletteuse=dither=bayer" -loop 0 {{out_gif}}`,
    [...H, '-i', 'inputs/in_video.mp4', '-filter_complex', 'fps=10,scale=320:-1:flags=lanczos,split[a][b];[a]palettegen=max_colors=64[p];[b][p]paletteuse=dither=bayer', '-loop', '0', 'outputs/anim.gif']],
  ['a thumbnail', 'ffmpeg -i {{in_video}} -vf thumbnail,scale=320:-1 -frames:v 1 {{out_thumb}}',
    [...H, '-i', 'inputs/in_video.mp4', '-vf', 'thumbnail,scale=320:-1', '-frames:v', '1', 'outputs/thumb.jpg']],
  ['an audio extract with metadata', `ffmpeg -i {{in_video}} -vn -c:a libmp3lame -q:a 2 -metadata title="My clip" -af loudnorm=I=-16:TP=-1.5 {{out_audio}}`,
    [...H, '-i', 'inputs/in_video.mp4', '-vn', '-c:a', 'libmp3lame', '-q:a', '2', '-metadata', 'title=My clip', '-af', 'loudnorm=I=-16:TP=-1.5', 'outputs/sound.mp3']],
  ['drawtext with text only', `ffmpeg -i {{in_video}} -vf "drawtext=text='Hello, world':x=10:y=10:fontsize=24" {{out_video}}`,
    [...H, '-i', 'inputs/in_video.mp4', '-vf', "drawtext=text='Hello, world':x=10:y=10:fontsize=24", 'outputs/result.mp4']],
  ['two outputs, one named by its declared filename', 'ffmpeg -i {{in_video}} -map 0 -c copy {{out_video}} -map 0:a -c:a libmp3lame sound.mp3',
    [...H, '-i', 'inputs/in_video.mp4', '-map', '0', '-c', 'copy', 'outputs/result.mp4', '-map', '0:a', '-c:a', 'libmp3lame', 'outputs/sound.mp3']],
  ['a loudness analysis to the null muxer plus a real output', 'ffmpeg -i {{in_video}} -af volumedetect -f null - -c copy {{out_video}}',
    [...H, '-i', 'inputs/in_video.mp4', '-af', 'volumedetect', '-f', 'null', '-', '-c', 'copy', 'outputs/result.mp4']],
  ['a global option after the output', 'ffmpeg -i {{in_audio}} {{out_audio}} -y',
    [...H, '-i', 'inputs/in_audio', 'outputs/sound.mp3', '-y']],
]

t.test('accepts legitimate commands and builds their exact argv', async (t) => {
  for (const [name, command, tail] of legitimate) {
    const outcome = applyFfmpegPolicy(command, context)
    t.ok(outcome.ok, name)
    if (outcome.ok) t.same(outcome.value.argv, [...L, ...tail], name)
    else t.fail(`${name}: ${outcome.violation.message}`)
  }
})

t.test('reads arguments without the ffmpeg word for yt-dlp post-processing', async (t) => {
  const outcome = applyFfmpegPolicy('-i {{in_video}} -c copy {{out_video}}', { ...context, mode: 'arguments' })
  t.ok(outcome.ok)
  if (outcome.ok) t.same(outcome.value.argv, [...L, ...H, '-i', 'inputs/in_video.mp4', '-c', 'copy', 'outputs/result.mp4'])
  const withWord = applyFfmpegPolicy('ffmpeg -i {{in_video}} {{out_video}}', { ...context, mode: 'arguments' })
  t.notOk(withWord.ok)
  if (!withWord.ok) t.match(withWord.violation.message, /leave out the word "ffmpeg"/)
})

t.test('hands a plain filename from one chained command to the next', async (t) => {
  const plan = planFfmpegCommands(
    [
      'ffmpeg -i {{in_video}} -vf scale=-2:360 -c:a copy small.mp4',
      'ffmpeg -i small.mp4 -t 1 -c copy part.mp4',
      'ffmpeg -i part.mp4 -c copy {{out_video}}',
    ],
    { mode: 'ffmpeg', inputs, outputs: { out_video: 'result.mp4' } },
  )
  t.ok(plan.ok)
  if (!plan.ok) return
  t.same(plan.argvs, [
    [...L, ...H, '-i', 'inputs/in_video.mp4', '-vf', 'scale=-2:360', '-c:a', 'copy', 'small.mp4'],
    [...L, ...H, '-i', 'small.mp4', '-t', '1', '-c', 'copy', 'part.mp4'],
    [...L, ...H, '-i', 'part.mp4', '-c', 'copy', 'outputs/result.mp4'],
  ])
})

t.test('lets a chained command read a declared output an earlier one wrote, by alias or filename', async (t) => {
  const plan = planFfmpegCommands(
    ['ffmpeg -i {{in_video}} -c copy {{out_video}}', 'ffmpeg -i {{out_video}} -frames:v 1 {{out_thumb}}', 'ffmpeg -i result.mp4 -vn {{out_audio}}'],
    { mode: 'ffmpeg', inputs, outputs: { out_video: 'result.mp4', out_thumb: 'thumb.jpg', out_audio: 'sound.mp3' } },
  )
  t.ok(plan.ok)
  if (plan.ok) {
    t.same(plan.argvs[1], [...L, ...H, '-i', 'outputs/result.mp4', '-frames:v', '1', 'outputs/thumb.jpg'])
    t.same(plan.argvs[2], [...L, ...H, '-i', 'outputs/result.mp4', '-vn', 'outputs/sound.mp3'])
  }
})

t.test('refuses a chained command that reads a file only a later command writes', async (t) => {
  const plan = planFfmpegCommands(
    ['ffmpeg -i small.mp4 -c copy {{out_video}}', 'ffmpeg -i {{in_video}} -c copy small.mp4'],
    { mode: 'ffmpeg', inputs, outputs: { out_video: 'result.mp4' } },
  )
  t.notOk(plan.ok)
  if (!plan.ok) {
    t.equal(plan.violation.commandIndex, 0)
    t.match(plan.violation.message, /^command 1: -i small.mp4: no earlier command wrote/)
  }
})

t.test('refuses a plan that never writes a declared output', async (t) => {
  const plan = planFfmpegCommands(['ffmpeg -i {{in_video}} -c copy {{out_video}}'], { mode: 'ffmpeg', inputs, outputs: { out_video: 'a.mp4', out_gif: 'b.gif' } })
  t.notOk(plan.ok)
  if (!plan.ok) {
    t.equal(plan.violation.code, 'NO_OUTPUT')
    t.match(plan.violation.message, /out_gif is not written/)
  }
})

t.test('refuses a declared output filename that is itself a path', async (t) => {
  const outcome = applyFfmpegPolicy('ffmpeg -i {{in_video}} {{out_video}}', { ...context, outputs: { out_video: '../../etc/cron.d/x' } })
  t.notOk(outcome.ok)
  if (!outcome.ok) t.match(outcome.violation.message, /"..\/..\/etc\/cron.d\/x": the filename must be a plain filename/)
})

t.test('accepts declared filenames the API accepts, under outputs/ where no protocol can be read into them', async (t) => {
  const outcome = applyFfmpegPolicy('ffmpeg -i {{in_video}} {{out_video}} -map 0 "my clip: take 2.mp4"', { ...context, outputs: { out_video: 'http:x.mp4', out_b: 'my clip: take 2.mp4' } })
  t.ok(outcome.ok)
  if (outcome.ok) t.same(outcome.value.argv.slice(-4), ['outputs/http:x.mp4', '-map', '0', 'outputs/my clip: take 2.mp4'])
  const intermediate = applyFfmpegPolicy('ffmpeg -i {{in_video}} http:x.mp4', { ...context, allowIntermediateFiles: true })
  t.notOk(intermediate.ok, 'an undeclared name with a colon stays refused')
})

t.test('refuses aliases that are not in_… or out_…', async (t) => {
  const bad = planFfmpegCommands(['ffmpeg -i {{in_a}} {{out_b}}'], { mode: 'ffmpeg', inputs: { 'in_a:x': 'inputs/in_a:x' }, outputs: { out_b: 'b.mp4' } })
  t.notOk(bad.ok)
  if (!bad.ok) t.match(bad.violation.message, /"in_a:x" is not a valid alias/)
  const swapped = planFfmpegCommands(['ffmpeg -i {{out_a}} {{in_b}}'], { mode: 'ffmpeg', inputs: { out_a: 'inputs/out_a' }, outputs: { in_b: 'b.mp4' } })
  t.notOk(swapped.ok)
})
