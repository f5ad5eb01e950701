import t from 'tap'
import {
  aliasProblem,
  extractPlaceholders,
  filenameProblem,
  isInputAlias,
  isOutputAlias,
  placeholderProblems,
  referencedAliases,
  substitutePlaceholders,
  UnresolvedPlaceholderError,
  unusedOutputs,
} from '../../contracts/placeholders.js'

t.test('recognises input and output aliases', async (t) => {
  const cases: [string, boolean, boolean][] = [
    ['in_video', true, false],
    ['in_1', true, false],
    ['out_small_720p', false, true],
    ['in_', false, false],
    ['out_', false, false],
    ['IN_video', false, false],
    ['in-video', false, false],
    ['in_vid eo', false, false],
    ['video', false, false],
    [`in_${'a'.repeat(61)}`, true, false],
    [`in_${'a'.repeat(62)}`, false, false],
  ]
  for (const [name, input, output] of cases) {
    t.equal(isInputAlias(name), input, `${name} input`)
    t.equal(isOutputAlias(name), output, `${name} output`)
  }
})

t.test('explains why a name is not an alias', async (t) => {
  t.equal(aliasProblem('in_ok', 'input'), null)
  t.match(aliasProblem('video', 'input'), /must start with "in_"/)
  t.match(aliasProblem('in_a-b', 'input'), /letters, digits or underscores/)
  t.match(aliasProblem('in_video', 'output'), /must start with "out_"/)
})

t.test('extracts both placeholder syntaxes in order', async (t) => {
  const found = extractPlaceholders('ffmpeg -i {{in_a}} -i <<in_b>> -map 0 {{out_c}} <<out_d>>')
  t.same(
    found.map((p) => [p.alias, p.text]),
    [
      ['in_a', '{{in_a}}'],
      ['in_b', '<<in_b>>'],
      ['out_c', '{{out_c}}'],
      ['out_d', '<<out_d>>'],
    ],
  )
  t.same(extractPlaceholders('ffmpeg -i a.mp4 -vf "scale=iw/2:-2" b.mp4'), [])
  t.same(extractPlaceholders('ffmpeg -i {{ in_a }} x'), [], 'a placeholder is one word: no spaces inside')
  t.same(referencedAliases('{{in_a}} {{in_a}} <<out_b>>'), ['in_a', 'out_b'])
})

t.test('reports placeholders that name no declared alias', async (t) => {
  const declared = { inputs: ['in_a'], outputs: ['out_b'] }
  const cases: [string, RegExp[]][] = [
    ['ffmpeg -i {{in_a}} {{out_b}}', []],
    ['ffmpeg -i <<in_a>> <<out_b>>', []],
    ['ffmpeg -i {{in_x}} {{out_b}}', [/\{\{in_x\}\} names no declared alias/]],
    ['ffmpeg -i {{}} {{out_b}}', [/\{\{\}\} names no alias/]],
    ['ffmpeg -i <<in_a>> <<out_z>> {{in_y}}', [/<<out_z>>/, /\{\{in_y\}\}/]],
  ]
  for (const [command, expected] of cases) {
    const problems = placeholderProblems(command, declared)
    t.equal(problems.length, expected.length, command)
    expected.forEach((pattern, i) => t.match(problems[i], pattern))
  }
})

t.test('finds declared outputs no command uses', async (t) => {
  t.same(unusedOutputs(['ffmpeg -i {{in_a}} {{out_a}}'], ['out_a', 'out_b']), ['out_b'])
  t.same(unusedOutputs(['ffmpeg -i {{in_a}} tmp.mp4', 'ffmpeg -i tmp.mp4 <<out_b>>'], ['out_b']), [])
})

t.test('substitutes paths for placeholders and refuses unknown aliases', async (t) => {
  const paths = { in_a: '/work/in/a.mp4', out_b: '/work/out/b.mp4' }
  t.equal(substitutePlaceholders('ffmpeg -i {{in_a}} -y <<out_b>>', paths), 'ffmpeg -i /work/in/a.mp4 -y /work/out/b.mp4')
  t.throws(() => substitutePlaceholders('ffmpeg -i {{in_zz}}', paths), UnresolvedPlaceholderError)
  t.throws(() => substitutePlaceholders('ffmpeg -i {{toString}}', paths), UnresolvedPlaceholderError, 'prototype names are not aliases')
})

t.test('accepts only plain filenames', async (t) => {
  const cases: [string, RegExp | null][] = [
    ['out.mp4', null],
    ['clip_720p.final.mkv', null],
    ['', /empty/],
    ['a/b.mp4', /path separators/],
    ['a\\b.mp4', /path separators/],
    ['..mp4', /\.\./],
    ['.hidden', /dot/],
    ['-y', /dash/],
    ['a\nb', /control/],
    ['{{x}}.mp4', /placeholder/],
    ['x'.repeat(256), /255 bytes/],
  ]
  for (const [name, problem] of cases) {
    if (problem) t.match(filenameProblem(name), problem, JSON.stringify(name))
    else t.equal(filenameProblem(name), null, name)
  }
})
