import t from 'tap'
import { InvalidRequestError, ValidationError } from '../../api/errors/api-errors.js'
import {
  checkCommandCount,
  checkFfmpegCommand,
  checkInputAliases,
  checkMetadata,
  checkOutputFiles,
  firstWord,
  urlProblem,
  ytdlpFfmpegArguments,
} from '../../api/commands/validation.js'

t.test('accepts only absolute http(s) URLs', async (t) => {
  const cases: [string, RegExp | null][] = [
    ['https://example.com/a.mp4', null],
    ['http://example.com:8080/a?b=c', null],
    ['ftp://example.com/a', /http or https/],
    ['file:///etc/passwd', /http or https/],
    ['javascript:alert(1)', /http or https/],
    ['example.com/a.mp4', /absolute/],
    ['', /absolute/],
    ['https://user:pw@example.com/a', /credentials/],
    [`https://example.com/${'a'.repeat(5000)}`, /at most/],
  ]
  for (const [url, problem] of cases) {
    if (problem) t.match(urlProblem(url), problem, url)
    else t.equal(urlProblem(url), null, url)
  }
})

t.test('checks metadata: at most 10 keys of strings, numbers and booleans, 422 otherwise', async (t) => {
  t.equal(checkMetadata(undefined), null)
  t.equal(checkMetadata(null), null)
  t.same(checkMetadata({ a: 'x', b: 1, c: false }), { a: 'x', b: 1, c: false })
  const ten = Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`k${i}`, i]))
  t.same(checkMetadata(ten), ten)
  const bad: [unknown, RegExp][] = [
    [{ ...ten, k10: 1 }, /at most 10 keys/],
    [{ a: null }, /metadata.a: must be a string, number or boolean/],
    [{ a: [1] }, /metadata.a/],
    [{ a: { b: 1 } }, /metadata.a/],
    [[1, 2], /must be an object/],
    [{ $where: 'x' }, /must not start with "\$"/],
    [{ 'a.b': 1 }, /contain "\."/],
  ]
  for (const [value, message] of bad) t.throws(() => checkMetadata(value), { name: 'ValidationError', message }, JSON.stringify(value))
})

t.test('input aliases fail with the class the endpoint assigns', async (t) => {
  t.throws(() => checkInputAliases({ video: 'https://a' }, 'input_files', InvalidRequestError), InvalidRequestError)
  t.throws(() => checkInputAliases({ video: 'https://a' }, 'input_urls', ValidationError), ValidationError)
  t.throws(() => checkInputAliases({}, 'input_files', InvalidRequestError), { message: /at least one/ })
  t.doesNotThrow(() => checkInputAliases({ in_a: 'anything' }, 'input_files', InvalidRequestError), 'URLs are checked separately')
})

t.test('output files need out_ aliases and distinct plain filenames', async (t) => {
  t.doesNotThrow(() => checkOutputFiles({ out_a: 'a.mp4', out_b: 'b.mp4' }, 'output_files', InvalidRequestError))
  t.throws(() => checkOutputFiles({ out_a: 'a.mp4', out_b: 'a.mp4' }, 'output_files', InvalidRequestError), { message: /already used by out_a/ })
  t.throws(() => checkOutputFiles({ a: 'a.mp4' }, 'output_files', InvalidRequestError), { message: /must start with "out_"/ })
  t.throws(() => checkOutputFiles({ out_a: '/tmp/a.mp4' }, 'output_files', InvalidRequestError), { message: /output_files.out_a: filename/ })
})

t.test('FFmpeg-endpoint commands begin with the word ffmpeg', async (t) => {
  const declared = { inputs: ['in_a'], outputs: ['out_b'] }
  const cases: [string, RegExp | null][] = [
    ['ffmpeg -i {{in_a}} {{out_b}}', null],
    ['  ffmpeg   -i <<in_a>> <<out_b>>', null],
    ['ffprobe -i {{in_a}} {{out_b}}', /must begin with "ffmpeg", not "ffprobe"/],
    ['/usr/bin/ffmpeg -i {{in_a}} {{out_b}}', /not "\/usr\/bin\/ffmpeg"/],
    ['ffmpegx -i {{in_a}} {{out_b}}', /not "ffmpegx"/],
    ['-i {{in_a}} {{out_b}}', /must begin with "ffmpeg"/],
    ['', /must not be empty/],
    ['ffmpeg', /no arguments/],
    ['ffmpeg -i {{in_c}} {{out_b}}', /names no declared alias/],
  ]
  for (const [command, problem] of cases) {
    if (problem) t.throws(() => checkFfmpegCommand(command, 'ffmpeg_command', declared, InvalidRequestError), { name: 'InvalidRequestError', message: problem }, command)
    else t.doesNotThrow(() => checkFfmpegCommand(command, 'ffmpeg_command', declared, InvalidRequestError), command)
  }
  t.equal(firstWord('  ffmpeg -i x'), 'ffmpeg')
})

t.test('run-ytdlp-command takes arguments only and tolerates a leading ffmpeg', async (t) => {
  const declared = { inputs: ['in_a'], outputs: ['out_b'] }
  t.equal(ytdlpFfmpegArguments('-i {{in_a}} {{out_b}}', 'ffmpeg_command', declared), '-i {{in_a}} {{out_b}}')
  t.equal(ytdlpFfmpegArguments(' ffmpeg -i {{in_a}} {{out_b}} ', 'ffmpeg_command', declared), '-i {{in_a}} {{out_b}}')
  t.throws(() => ytdlpFfmpegArguments('ffmpeg', 'ffmpeg_command', declared), { name: 'ValidationError', message: /must hold FFmpeg arguments/ })
  t.throws(() => ytdlpFfmpegArguments('-i {{in_x}} {{out_b}}', 'ffmpeg_command', declared), { name: 'ValidationError' })
})

t.test('at most 10 commands', async (t) => {
  t.doesNotThrow(() => checkCommandCount(10, 'commands'))
  t.throws(() => checkCommandCount(11, 'commands'), { name: 'ValidationError', message: /commands: at most 10 commands are allowed, got 11/ })
})
