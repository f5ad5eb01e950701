import t from 'tap'
import { formatFilterArgs, parseFilterOptions, parseFiltergraph } from '../../contracts/filtergraph.js'

type Shape = Array<[string, Array<[string | null, string]>, string[], string[]]>

const shape = (graph: string): Shape =>
  parseFiltergraph(graph).map((f) => [f.name, f.options.map((o) => [o.key, o.value] as [string | null, string]), f.inputs, f.outputs])

const graphs: Array<[string, string, Shape]> = [
  ['reads a single filter without arguments', 'hflip', [['hflip', [], [], []]]],
  ['reads positional and named options', 'scale=640:-2:flags=lanczos', [['scale', [[null, '640'], [null, '-2'], ['flags', 'lanczos']], [], []]]],
  ['splits a chain on commas', 'fps=10, scale=320:-1', [['fps', [[null, '10']], [], []], ['scale', [[null, '320'], [null, '-1']], [], []]]],
  ['splits chains on semicolons and reads labels', '[0:v][1:v]overlay=10:10[v];[0:a]volume=0.5[a]', [
    ['overlay', [[null, '10'], [null, '10']], ['0:v', '1:v'], ['v']],
    ['volume', [[null, '0.5']], ['0:a'], ['a']],
  ]],
  ['keeps a quoted comma inside the arguments', "drawtext=text='a, b':x=1", [['drawtext', [['text', 'a, b'], ['x', '1']], [], []]]],
  ['removes one level of backslash escaping per level', "drawtext=text=a\\\\\\:b", [['drawtext', [['text', 'a:b']], [], []]]],
  ['keeps a quoted colon in an expression at the graph level', "scale='iw/2:ih/2'", [['scale', [[null, 'iw/2'], [null, 'ih/2']], [], []]]],
  ['strips an @instance suffix from the name', 'volume@v1=2', [['volume', [[null, '2']], [], []]]],
  ['skips a leading sws_flags section', 'sws_flags=bicubic;scale=1:1', [['scale', [[null, '1'], [null, '1']], [], []]]],
  ['reads a key with blanks around it as a key', 'drawtext=text=a: textfile =x', [['drawtext', [['text', 'a'], ['textfile', 'x']], [], []]]],
  ['reads an escaped filter name as its unescaped name', "mo\\vie=x", [['movie', [[null, 'x']], [], []]]],
  ['reads a quoted filter name as its unquoted name', "'movie'=x", [['movie', [[null, 'x']], [], []]]],
]

for (const [name, graph, expected] of graphs) {
  t.test(name, async (t) => {
    t.same(shape(graph), expected)
  })
}

const broken: Array<[string, string, RegExp]> = [
  ['refuses an unterminated quote', "drawtext=text='abc", /unterminated quote/],
  ['refuses an unterminated label', '[0:v overlay', /unterminated label|invalid link label/],
  ['refuses an empty filter name', 'scale=1:1,,hflip', /empty filter name/],
  ['refuses a filter name with odd characters', 'sc/ale=1', /invalid filter name/],
  ['refuses a trailing backslash', 'scale=1\\', /trailing backslash/],
  ['refuses garbage after a filter', 'scale=1:1[a] x', /unexpected/],
  ['refuses sws_flags without a graph after it', 'sws_flags=bicubic', /sws_flags/],
]

for (const [name, graph, message] of broken) {
  t.test(name, async (t) => {
    t.throws(() => parseFiltergraph(graph), { name: 'FiltergraphSyntaxError', message })
  })
}

t.test('reads filter options on their own', async (t) => {
  t.same(parseFilterOptions("a=1:'b:c':d\\:e"), [{ key: 'a', value: '1' }, { key: null, value: 'b:c' }, { key: null, value: 'd:e' }])
  t.same(parseFilterOptions(''), [])
})

// Values formatFilterArgs must carry through both levels of unescaping unchanged.
const awkwardValues: Array<[string, Array<[string | null, string]>]> = [
  ['a work-dir path', [[null, 'inputs/in_srt.srt'], ['force_style', 'FontSize=24,PrimaryColour=&H00FFFF&']]],
  ['separators of both levels', [['text', "a:b,c;d[e]f'g\\h"], ['x', '10']]],
  ['blanks at both ends', [['text', ' padded ']]],
  ['an equals sign in a positional value', [[null, 'k=v'], ['y', '1']]],
  ['an empty value', [['text', '']]],
]

for (const [name, options] of awkwardValues) {
  t.test(`formatFilterArgs writes ${name} back so the graph parser reads the same options`, async (t) => {
    const args = formatFilterArgs(options.map(([key, value]) => ({ key, value })))
    const [node] = parseFiltergraph(`[in]drawtext=${args}[out],hflip`)
    t.same(node?.options.map((o) => [o.key, o.value]), options)
    t.same(node?.outputs, ['out'])
  })
}

t.test('records where the raw arguments of each filter sit in the graph text', async (t) => {
  const graph = "scale=1:1, drawtext=text='a\\,b' [x];[x]hflip"
  const nodes = parseFiltergraph(graph)
  t.same(nodes.map((n) => (n.argsSpan ? graph.slice(...n.argsSpan).trim() : null)), ['1:1', "text='a\\,b'", null])
})
