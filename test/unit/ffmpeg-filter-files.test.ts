import t from 'tap'
import { planFfmpegCommands } from '../../contracts/ffmpeg-plan.js'
import { applyFfmpegPolicy, type PolicyContext } from '../../contracts/ffmpeg-policy.js'
import { DEMUXER_WHITELIST } from '../../contracts/ffmpeg-formats.js'
import { inputPathsFor } from '../../contracts/ffmpeg-paths.js'
import type { WorkFileCheck } from '../../contracts/ffmpeg-work-files.js'

const inputs = inputPathsFor({
  in_video: 'https://media.example.com/clip.mp4',
  in_srt: 'https://media.example.com/subs.srt',
  in_font: 'https://media.example.com/DejaVuSans.ttf',
  in_text: 'https://media.example.com/caption.txt',
  in_lut: 'https://media.example.com/look.cube',
  in_logo: 'https://media.example.com/logo.mp4',
})
const outputs = { out_video: 'result.mp4', out_subs: 'subs.ass' }
const plain: PolicyContext = { mode: 'ffmpeg', inputs, outputs }
const folder: PolicyContext = { ...plain, folder: true }

/** The -vf value and the checks of an accepted `ffmpeg -i {{in_video}} -vf GRAPH {{out_video}}`. */
function acceptedGraph(graph: string, context: PolicyContext): { graph: string; checks: WorkFileCheck[] } | string {
  const outcome = applyFfmpegPolicy(`ffmpeg -i {{in_video}} -vf ${graph} {{out_video}}`, context)
  if (!outcome.ok) return `${outcome.violation.code}: ${outcome.violation.message}`
  const argv = outcome.value.argv
  return { graph: argv[argv.indexOf('-vf') + 1] as string, checks: outcome.value.checks }
}

const movieOpts = `format_opts=protocol_whitelist\\\\=file\\\\:format_whitelist\\\\=${DEMUXER_WHITELIST.replaceAll(',', '\\,')}`

// [name, graph (shell word), context, graph ffmpeg runs, checks]
const accepted: Array<[string, string, PolicyContext, string, WorkFileCheck[]]> = [
  ['burns in subtitles named by a placeholder', 'subtitles={{in_srt}}', plain, 'subtitles=inputs/in_srt.srt',
    [{ kind: 'subtitles', path: 'inputs/in_srt.srt', argument: '-vf subtitles filename' }]],
  ['burns in subtitles named by an angle placeholder in quotes, keeping force_style', `"subtitles='<<in_srt>>':force_style='FontSize=24,Outline=1'"`, plain,
    'subtitles=inputs/in_srt.srt:force_style=FontSize\\\\=24\\,Outline\\\\=1',
    [{ kind: 'subtitles', path: 'inputs/in_srt.srt', argument: '-vf subtitles filename' }]],
  ['reads subtitles named by the f alias', 'subtitles=f={{in_srt}}', plain, 'subtitles=f=inputs/in_srt.srt',
    [{ kind: 'subtitles', path: 'inputs/in_srt.srt', argument: '-vf subtitles filename' }]],
  ['draws text with a font input', 'drawtext=fontfile={{in_font}}:text=hi', plain, 'drawtext=fontfile=inputs/in_font.ttf:text=hi', []],
  ['draws text with a positional font input', 'drawtext={{in_font}}:text=hi', plain, 'drawtext=inputs/in_font.ttf:text=hi', []],
  ['draws the text of a text input', 'drawtext=textfile={{in_text}}:fontsize=30', plain, 'drawtext=textfile=inputs/in_text.txt:fontsize=30', []],
  ['applies a 3D LUT input', 'lut3d={{in_lut}}', plain, 'lut3d=inputs/in_lut.cube', []],
  ['applies a 3D LUT by key in a chain of filters', 'scale=320:-2,lut3d=file={{in_lut}}:interp=trilinear', plain,
    'scale=320:-2,lut3d=file=inputs/in_lut.cube:interp=trilinear', []],
  ['reads subtitles and fonts of the folder', 'subtitles=subs/movie.srt:fontsdir=fonts', folder, 'subtitles=subs/movie.srt:fontsdir=fonts', [
    { kind: 'subtitles', path: 'subs/movie.srt', argument: '-vf subtitles filename' },
    { kind: 'directory', path: 'fonts', argument: '-vf subtitles fontsdir' },
  ]],
  ['reads an ASS file and a fonts directory of the folder', 'ass=subs/a.ass:fontsdir=fonts/extra', folder, 'ass=subs/a.ass:fontsdir=fonts/extra', [
    { kind: 'file', path: 'subs/a.ass', argument: '-vf ass filename' },
    { kind: 'directory', path: 'fonts/extra', argument: '-vf ass fontsdir' },
  ]],
  ['keeps drawtext without files as it was written', `"drawtext=text='a, b':x=10"`, plain, "drawtext=text='a, b':x=10", []],
  ['opens a movie source with the whitelists -i gets', `"movie={{in_logo}}[l];[in][l]overlay=10:10"`, plain,
    `movie=inputs/in_logo.mp4:${movieOpts}[l];[in][l]overlay=10:10`, []],
]

for (const [name, graph, context, expected, checks] of accepted) {
  t.test(`${name}`, async (t) => {
    t.same(acceptedGraph(graph, context), { graph: expected, checks })
  })
}

// [name, graph, context, code and message]
const refused: Array<[string, string, PolicyContext, RegExp]> = [
  ['a placeholder in drawtext text', 'drawtext=text={{in_srt}}', plain, /^PLACEHOLDER_NOT_WHOLE_ARGUMENT: -vf: drawtext option text=\{\{in_srt\}\}: placeholders may only name a file/],
  ['a placeholder glued to text in a file option', "subtitles=subs_{{in_srt}}", plain, /^PLACEHOLDER_NOT_WHOLE_ARGUMENT: -vf: subtitles option filename=subs_\{\{in_srt\}\}: a placeholder must be the whole value/],
  ['a placeholder in a scale option', 'scale={{in_video}}', plain, /^PLACEHOLDER_NOT_WHOLE_ARGUMENT: -vf: scale option #1=\{\{in_video\}\}/],
  ['a placeholder in force_style', 'subtitles={{in_srt}}:force_style={{in_font}}', plain, /^PLACEHOLDER_NOT_WHOLE_ARGUMENT: -vf: subtitles option force_style/],
  ['a fontfile of /etc/passwd', 'drawtext=fontfile=/etc/passwd:text=x', plain, /^FILTER_OPTION_NOT_ALLOWED: -vf: drawtext option fontfile \/etc\/passwd: absolute paths are not allowed/],
  ['a fontfile of /etc/passwd with a folder', 'drawtext=fontfile=/etc/passwd:text=x', folder, /^FILTER_OPTION_NOT_ALLOWED: -vf: drawtext option fontfile \/etc\/passwd: absolute paths are not allowed$/],
  ['a subtitles file climbing out of the folder', 'subtitles=subs/../../x.srt', folder, /^FILTER_OPTION_NOT_ALLOWED: -vf: subtitles option filename subs\/..\/..\/x.srt: paths leaving the work directory/],
  ['a subtitles file named by a protocol', `"subtitles='file\\\\:/etc/passwd'"`, folder, /^FILTER_OPTION_NOT_ALLOWED: -vf: subtitles option filename file:\/etc\/passwd: protocols and URLs/],
  ['a textfile under the service\'s own .ffkube', 'drawtext=textfile=.ffkube/spec.json', folder, /^FILTER_OPTION_NOT_ALLOWED: -vf: drawtext option textfile .ffkube\/spec.json: ".ffkube": each part/],
  ['a folder path under inputs/', 'ass=inputs/in_srt.srt', folder, /^FILTER_OPTION_NOT_ALLOWED: -vf: ass option filename inputs\/in_srt.srt: inputs\/ holds the service's own files/],
  ['an unknown alias in a file option', 'subtitles={{in_nope}}', plain, /^UNKNOWN_PLACEHOLDER: -vf: subtitles option filename \{\{in_nope\}\}: in_nope is not a declared input/],
  ['a fontsdir named by a placeholder', 'subtitles={{in_srt}}:fontsdir={{in_font}}', plain, /^FILTER_OPTION_NOT_ALLOWED: -vf: subtitles option fontsdir=\{\{in_font\}\}: names a directory of the command's folder/],
  ['a fontsdir without a folder', 'ass={{in_srt}}:fontsdir=fonts', plain, /^FILTER_OPTION_NOT_ALLOWED: -vf: ass option fontsdir fonts: no earlier command wrote this file/],
  ['curves writing a plot', 'curves=preset=vintage:plot=x.plt', folder, /^FILTER_OPTION_NOT_ALLOWED: -vf: curves option plot writes a file/],
  ['loudnorm writing its stats file', 'loudnorm=print_format=json:stats_file=stats.json', folder, /^FILTER_OPTION_NOT_ALLOWED: -vf: loudnorm option stats_file writes a file/],
  ['paletteuse writing its kd-tree', 'paletteuse=debug_kdtree=k.dot', folder, /^FILTER_OPTION_NOT_ALLOWED: -vf: paletteuse option debug_kdtree writes a file/],
  ['a movie with its own format options', "movie={{in_logo}}:format_opts=protocol_whitelist=file", plain, /^FILTER_OPTION_NOT_ALLOWED: -vf: movie option format_opts: the policy sets format_opts/],
  ['a movie forcing a playlist demuxer', 'movie={{in_logo}}:f=hls', plain, /^FORMAT_NOT_ALLOWED: -vf: movie option format_name=hls: not an allowed input format/],
  ['a positional value past the known ones', 'drawtext=a.ttf:hi:t.txt:white', folder, /^FILTER_OPTION_NOT_ALLOWED: -vf: filter drawtext takes at most 3 positional values/],
  ['a positional value after a named one', 'subtitles=force_style=x:{{in_srt}}', plain, /^FILTER_OPTION_NOT_ALLOWED: -vf: filter subtitles takes no positional value after a key=value option/],
  ['an empty file option', 'drawtext=fontfile=:text=x', plain, /^FILTER_OPTION_NOT_ALLOWED: -vf: drawtext option fontfile is empty/],
  ['sendcmd, which can re-init other filters', 'sendcmd=f=cmds.txt,drawtext=text=a', folder, /^FILTER_NOT_ALLOWED: -vf: filter sendcmd is not allowed/],
]

for (const [name, graph, context, expected] of refused) {
  t.test(`refuses ${name}`, async (t) => {
    t.match(acceptedGraph(graph, context), expected)
  })
}

t.test('burns in an ASS file an earlier command of the chain wrote, by its plain name and by its output alias', async (t) => {
  const plan = planFfmpegCommands(
    ['ffmpeg -i {{in_srt}} tmp.ass', 'ffmpeg -i {{in_video}} -vf ass=tmp.ass -c:a copy {{out_video}}'],
    { mode: 'ffmpeg', inputs, outputs: { out_video: 'result.mp4' } },
  )
  t.ok(plan.ok)
  if (plan.ok) {
    t.ok(plan.argvs[1]?.includes('ass=tmp.ass'))
    t.same(plan.checks, [[], []], 'a chain file needs no run-time check: an earlier command wrote it')
  }
  const declared = planFfmpegCommands(
    ['ffmpeg -i {{in_srt}} {{out_subs}}', 'ffmpeg -i {{in_video}} -vf subtitles={{out_subs}} {{out_video}}', 'ffmpeg -i {{in_video}} -vf ass=subs.ass -f null -'],
    { mode: 'ffmpeg', inputs, outputs },
  )
  t.ok(declared.ok)
  if (declared.ok) {
    t.ok(declared.argvs[1]?.includes('subtitles=outputs/subs.ass'), 'the alias resolves to the declared output path')
    t.ok(declared.argvs[2]?.includes('ass=outputs/subs.ass'), 'the declared filename too')
    t.same(declared.checks[1], [{ kind: 'subtitles', path: 'outputs/subs.ass', argument: '-vf subtitles filename' }])
  }
})

t.test('refuses a filter reading a chain file before the command that writes it', async (t) => {
  const plan = planFfmpegCommands(
    ['ffmpeg -i {{in_video}} -vf ass=tmp.ass {{out_video}}', 'ffmpeg -i {{in_srt}} tmp.ass'],
    { mode: 'ffmpeg', inputs, outputs: { out_video: 'result.mp4' } },
  )
  t.notOk(plan.ok)
  if (!plan.ok) t.match(plan.violation.message, /^command 1: -vf: ass option filename tmp.ass: no earlier command wrote this file/)
})

t.test('resolves file options inside -filter_complex and keeps its labels', async (t) => {
  const outcome = applyFfmpegPolicy(
    `ffmpeg -i {{in_video}} -filter_complex "[0:v]subtitles={{in_srt}}[s];[s]drawtext=fontfile={{in_font}}:text='x'[v]" -map "[v]" {{out_video}}`,
    plain,
  )
  t.ok(outcome.ok)
  if (outcome.ok) {
    const argv = outcome.value.argv
    t.equal(argv[argv.indexOf('-filter_complex') + 1], '[0:v]subtitles=inputs/in_srt.srt[s];[s]drawtext=fontfile=inputs/in_font.ttf:text=x[v]')
  }
})
