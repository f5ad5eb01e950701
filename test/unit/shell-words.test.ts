import t from 'tap'
import { ShellSyntaxError, splitShellWords } from '../../contracts/shell-words.js'

const cases: Array<[string, string, string[]]> = [
  ['splits on blanks', 'ffmpeg -i a.mp4  out.mp4', ['ffmpeg', '-i', 'a.mp4', 'out.mp4']],
  ['treats tabs and newlines as blanks', 'a\tb\nc\r\nd', ['a', 'b', 'c', 'd']],
  ['ignores leading and trailing blanks', '   a b   ', ['a', 'b']],
  ['returns no words for an empty string', '', []],
  ['returns no words for blanks only', ' \t\n ', []],
  ['keeps single-quoted text literally', "'a b' 'c\\d' '$HOME'", ['a b', 'c\\d', '$HOME']],
  ['keeps double-quoted text with its blanks', '"a b"  "c"', ['a b', 'c']],
  ['unescapes \\" \\\\ \\$ and \\` inside double quotes', '"a\\"b\\\\c\\$d\\`e"', ['a"b\\c$d`e']],
  ['keeps other backslashes inside double quotes', '"a\\nb\\:c"', ['a\\nb\\:c']],
  ['unescapes any character after a backslash outside quotes', 'a\\ b \\\'c\\" \\\\', ['a b', "'c\"", '\\']],
  ['joins adjacent quoted and unquoted parts into one word', `a'b c'"d e"f`, ['ab cd ef']],
  ['makes an empty word of an empty quoted string', `a '' "" b`, ['a', '', '', 'b']],
  ['drops a backslash-newline as a line continuation', 'a\\\nb c \\\n d', ['ab', 'c', 'd']],
  ['keeps single quotes inside double quotes', `"it's"`, ["it's"]],
  ['keeps double quotes inside single quotes', `'say "hi"'`, ['say "hi"']],
  ['expands no variables', '$HOME ${PATH} $(id) `id`', ['$HOME', '${PATH}', '$(id)', '`id`']],
  ['expands no globs or tildes', '* ?.mp4 [ab] ~ ~/x', ['*', '?.mp4', '[ab]', '~', '~/x']],
  ['keeps shell operators as literal text', 'a;b | c && d > e < f &', ['a;b', '|', 'c', '&&', 'd', '>', 'e', '<', 'f', '&']],
  ['keeps a filtergraph with quotes intact', `-vf "drawtext=text='a b':x=1"`, ['-vf', "drawtext=text='a b':x=1"]],
  ['keeps placeholders as words', '-i {{in_a}} <<out_b>>', ['-i', '{{in_a}}', '<<out_b>>']],
  ['keeps non-ASCII text', '"héllo wörld" 日本', ['héllo wörld', '日本']],
]

for (const [name, input, expected] of cases) {
  t.test(name, async (t) => {
    t.same(splitShellWords(input), expected)
  })
}

const broken: Array<[string, string, RegExp, number]> = [
  ['rejects an unterminated single quote', "a 'b c", /unterminated single quote at position 2/, 2],
  ['rejects an unterminated double quote', 'a "b c', /unterminated double quote at position 2/, 2],
  ['rejects a double quote whose closing quote is escaped', 'a "b\\"', /unterminated double quote/, 2],
  ['rejects a trailing backslash', 'a b\\', /trailing backslash at position 3/, 3],
  ['rejects a single quote opened inside nothing', "'", /unterminated single quote/, 0],
]

for (const [name, input, message, position] of broken) {
  t.test(name, async (t) => {
    t.throws(() => splitShellWords(input), { name: 'ShellSyntaxError', message })
    try {
      splitShellWords(input)
    } catch (error) {
      t.ok(error instanceof ShellSyntaxError)
      t.equal((error as ShellSyntaxError).position, position)
    }
  })
}
