/**
 * The argument policy's option table (contracts/ffmpeg-options.ts) against
 * the ffmpeg binary the runner runs. If the table took an option that reads a
 * value for a flag, the value would pass the policy as an output name while
 * ffmpeg reads it as the option's value, or the other way round. The binary
 * itself is asked, with a debug parse, so the table cannot drift from it when
 * ffmpeg is replaced.
 */
import t from 'tap'
import { execFile } from 'node:child_process'
import { resolveTool } from '../../api/executors/tool-paths.js'
import { ALLOWED_OPTIONS } from '../../contracts/ffmpeg-options.js'
import { scratchDir } from '../harness/scratch.js'

const PROBE = '__ffkube_probe__'

interface Parsed {
  known: boolean
  takesValue: boolean
  global: boolean
  line: string
}

/**
 * How ffmpeg splits `-<name> PROBE`: its debug log prints, per word, "Reading
 * option '-x' ... matched as option 'x' (…) with argument 'y'." (an AVOption
 * or an input url likewise), then applies global options in a group of their
 * own ("Parsing a group of options: global .") before any file's.
 */
function parse(ffmpeg: string, cwd: string, name: string): Promise<Parsed> {
  return new Promise((resolve, reject) => {
    execFile(ffmpeg, ['-hide_banner', '-nostdin', '-loglevel', 'debug', `-${name}`, PROBE], { cwd, timeout: 30_000 }, (error, _stdout, stderr) => {
      if (error && error.killed) return reject(new Error(`ffmpeg -${name} did not end: ${stderr}`))
      const lines = stderr.split('\n')
      // The word's report runs from its "Reading option" line to the next word's (ffmpeg may log in between).
      const from = lines.findLastIndex((line) => line.startsWith(`Reading option '-${name}' ...`))
      const to = lines.findIndex((line, i) => i > from && (line.startsWith('Reading option ') || line.startsWith('Finished splitting')))
      const reading = from < 0 ? '' : lines.slice(from, to < 0 ? undefined : to).join(' ')
      const match = / matched as (?:option '[^']+' \(.*?\)|AVOption '[^']+'|input url) with argument ('[^']*'|[^'\s.]+)/.exec(reading)
      const start = lines.indexOf('Parsing a group of options: global .')
      const end = lines.indexOf('Successfully parsed a group of options.', start)
      const globalGroup = start < 0 ? [] : lines.slice(start, end < 0 ? undefined : end)
      resolve({
        known: match !== null,
        takesValue: match?.[1] === `'${PROBE}'`,
        global: globalGroup.some((line) => line.startsWith(`Applying option ${name} `)),
        line: reading || lines.slice(0, 8).join(' | '),
      })
    })
  })
}

t.test('every option the policy allows is read by the runner’s ffmpeg as the policy reads it', async (t) => {
  const ffmpeg = resolveTool('ffmpeg')
  const cwd = await scratchDir(t, 'ffkube-option-table-')
  const entries = [...ALLOWED_OPTIONS.entries()]
  t.ok(entries.length > 100, `the table lists ${entries.length} options`)
  const results = new Map<string, Parsed>()
  // Two at a time: the machine is shared, and each run is one short ffmpeg start.
  const queue = [...entries]
  await Promise.all(
    [0, 1].map(async () => {
      for (let next = queue.shift(); next; next = queue.shift()) results.set(next[0], await parse(ffmpeg, cwd, next[0]))
    }),
  )
  for (const [name, rule] of entries) {
    const parsed = results.get(name) as Parsed
    t.test(`-${name}`, async (t) => {
      t.ok(parsed.known, `ffmpeg knows -${name}: ${parsed.line}`)
      t.equal(parsed.takesValue, rule.kind !== 'flag', `ffmpeg ${parsed.takesValue ? 'reads a value after' : 'reads no value after'} -${name}: ${parsed.line}`)
      if (rule.kind !== 'input') t.equal(parsed.global, rule.global === true, `-${name} is ${parsed.global ? '' : 'not '}a global option for ffmpeg`)
    })
  }
})
