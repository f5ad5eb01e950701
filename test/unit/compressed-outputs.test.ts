import t from 'tap'
import { compressOutputsProblem } from '../../contracts/compressed-outputs.js'
import type { CollectedOutput } from '../../runner-image/runner/produced-files.js'
import { parseCommandSpec, SpecError } from '../../runner-image/runner/spec.js'
import { deflates, planZips } from '../../runner-image/runner/upload/output-zips.js'

t.test('compress_outputs is true or declared aliases, each once, and true never beside a declared out_all', async (t) => {
  const declared = ['out_hls', 'out_mp4']
  const cases: Array<[true | string[], string[], string | null]> = [
    [true, declared, null],
    [['out_hls'], declared, null],
    [['out_hls', 'out_mp4'], declared, null],
    [true, ['out_all'], 'true reports every output as out_all, which output_files already declares; rename that output'],
    [['out_all'], ['out_all'], null],
    [[], declared, 'must list at least one out_* alias, or be true'],
    [['out_hls', 'out_hls'], declared, 'lists "out_hls" twice'],
    [['out_x'], declared, '"out_x" is not an alias of output_files'],
    [['in_video'], declared, '"in_video" is not an alias of output_files'],
  ]
  for (const [value, aliases, problem] of cases) t.equal(compressOutputsProblem(value, aliases), problem, JSON.stringify(value))
})

t.test('text and raw media are deflated inside a zip, compressed media and images are stored', async (t) => {
  for (const name of ['playlist.m3u8', 'manifest.mpd', 'subs.srt', 'subs.vtt', 'list.txt', 'sound.wav', 'frame.bmp', 'noext']) t.ok(deflates(name), name)
  for (const name of ['seg_000.ts', 'init.mp4', 'chunk-1.m4s', 'thumb.JPG', 'frame.png', 'clip.webm', 'sound.m4a']) t.notOk(deflates(name), name)
})

const hls: CollectedOutput = {
  file: { alias: 'out_hls', filename: 'playlist.m3u8', path: 'outputs/out_hls', main: 'playlist.m3u8' },
  members: [
    { relative: 'playlist.m3u8', path: 'outputs/out_hls/playlist.m3u8', sizeBytes: 100 },
    { relative: 'seg_000.ts', path: 'outputs/out_hls/seg_000.ts', sizeBytes: 1000 },
  ],
  mainPath: 'outputs/out_hls/playlist.m3u8',
  mainName: 'playlist.m3u8',
}
const mp4: CollectedOutput = {
  file: { alias: 'out_mp4', filename: 'full.mp4', path: 'outputs/full.mp4', main: null },
  members: null,
  mainPath: 'outputs/full.mp4',
  mainName: 'full.mp4',
}
const allFiles = [
  { filename: 'playlist.m3u8', path: 'outputs/out_hls/playlist.m3u8' },
  { filename: 'seg_000.ts', path: 'outputs/out_hls/seg_000.ts' },
  { filename: 'full.mp4', path: 'outputs/full.mp4' },
]

t.test('listed aliases become one zip each, named after the alias, holding the alias\'s files by their relative names', async (t) => {
  const { zips, plain } = planZips([hls, mp4], ['out_hls'], allFiles)
  t.same(zips, [{
    alias: 'out_hls', filename: 'out_hls.zip', path: '.ffkube/zips/out_hls.zip',
    entries: [{ name: 'playlist.m3u8', path: 'outputs/out_hls/playlist.m3u8' }, { name: 'seg_000.ts', path: 'outputs/out_hls/seg_000.ts' }],
  }])
  t.same(plain, [mp4])
  t.same(planZips([hls, mp4], ['out_mp4'], allFiles).zips[0]?.entries, [{ name: 'full.mp4', path: 'outputs/full.mp4' }], 'a single file sits at the zip\'s root')
})

t.test('true puts every output in one outputs.zip reported as out_all, laid out as the command\'s folder would be', async (t) => {
  const { zips, plain } = planZips([hls, mp4], true, allFiles)
  t.same(zips, [{ alias: 'out_all', filename: 'outputs.zip', path: '.ffkube/zips/outputs.zip', entries: allFiles.map((f) => ({ name: f.filename, path: f.path })) }])
  t.same(plain, [])
  t.same(planZips([hls, mp4], undefined, allFiles), { zips: [], plain: [hls, mp4] }, 'without the option nothing is zipped')
})

t.test('the runner reads compressOutputs from its spec and refuses a malformed one', async (t) => {
  const base = { commandId: 'cmd_1', commandType: 'FFMPEG_COMMAND', ffmpegCommands: ['ffmpeg -i a b'], inputFiles: {}, outputFiles: { out_hls: 'p.m3u8' } }
  t.equal(parseCommandSpec(JSON.stringify({ ...base, compressOutputs: true })).compressOutputs, true)
  t.same(parseCommandSpec(JSON.stringify({ ...base, compressOutputs: ['out_hls'] })).compressOutputs, ['out_hls'])
  t.notOk('compressOutputs' in parseCommandSpec(JSON.stringify(base)))
  t.throws(() => parseCommandSpec(JSON.stringify({ ...base, compressOutputs: 'yes' })), new SpecError('compressOutputs must be true or an array of strings'))
  t.throws(() => parseCommandSpec(JSON.stringify({ ...base, compressOutputs: ['out_x'] })), new SpecError('compressOutputs "out_x" is not an alias of output_files'))
})
