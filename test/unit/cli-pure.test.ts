import t from 'tap'
import { ApiError, type CommandEvent, type CommandPollResponse } from '../../client/index.js'
import { resolveConfig } from '../../cli/config.js'
import { safeMemberPath, safeOutputName } from '../../cli/downloads.js'
import { followCommand, STREAM_ATTEMPTS } from '../../cli/follow.js'
import { looksLikeUrl, parsePairs, parsePositiveNumber, parseWholeNumber } from '../../cli/pairs.js'
import { stageOf } from '../../cli/progress-display.js'

t.test('safeOutputName keeps a plain name and makes a hostile one harmless', async (t) => {
  const cases: [string | null, string][] = [
    ['small.mp4', 'small.mp4'],
    ['my clip (1).mp4', 'my clip _1_.mp4'],
    ['../../etc/passwd', 'passwd'],
    ['..\\..\\boot.ini', 'boot.ini'],
    ['.bashrc', 'bashrc'],
    ['...', 'out_x'],
    ['..', 'out_x'],
    ['', 'out_x'],
    [null, 'out_x'],
    ['dir/', 'out_x'],
    ['a\u0000b', 'a_b'],
    ['\u001b[31mred.txt', '_31mred.txt'],
    ['vidéo.mp4', 'vidéo.mp4'],
    ['-rf', 'rf'],
    [`${'x'.repeat(300)}.mp4`, `${'x'.repeat(196)}.mp4`],
  ]
  for (const [raw, expected] of cases) t.equal(safeOutputName(raw, 'out_x'), expected, JSON.stringify(raw))
})

t.test('safeMemberPath keeps a multi-file output\'s folders and refuses a path that would leave the directory', async (t) => {
  const cases: [string, string | null][] = [
    ['seg_001.ts', 'seg_001.ts'],
    ['v0/prog.m3u8', 'v0/prog.m3u8'],
    ['v0/./seg 1.ts', 'v0/seg 1.ts'],
    ['v0//seg.ts', 'v0/seg.ts'],
    ['../escaped.ts', null],
    ['v0/../../x.ts', null],
    ['/etc/passwd', 'etc/passwd'],
    ['C:\\Windows\\evil.bat', 'C_/Windows/evil.bat'],
    ['.ssh/authorized_keys', 'ssh/authorized_keys'],
    ['', null],
    ['a/b/c/d/e/f/g/h/i.ts', null],
  ]
  for (const [raw, expected] of cases) t.equal(safeMemberPath(raw), expected, JSON.stringify(raw))
})

t.test('parsePairs splits at the first = and refuses what is not NAME=VALUE', async (t) => {
  t.same(parsePairs(['in_a=https://x/?a=b', 'in_b=c'], '--in'), { in_a: 'https://x/?a=b', in_b: 'c' })
  for (const bad of [['novalue'], ['=x'], ['a='], ['a=1', 'a=2']]) t.throws(() => parsePairs(bad, '--in'), { name: 'UsageError', exitCode: 2 }, bad.join(' '))
})

t.test('numbers are whole (or positive) as written, never coerced', async (t) => {
  t.equal(parseWholeNumber('10', '--limit', 1, 100), 10)
  for (const bad of ['0', '101', '1.5', '1e1', ' 5', '0x10', '']) t.throws(() => parseWholeNumber(bad, '--limit', 1, 100), { name: 'UsageError' }, bad)
  t.equal(parsePositiveNumber('0.5', '--vcpu'), 0.5)
  for (const bad of ['0', '-1', 'one', '1e3', 'Infinity']) t.throws(() => parsePositiveNumber(bad, '--vcpu'), { name: 'UsageError' }, bad)
})

t.test('a value with a scheme is a URL; anything else names a local file', async (t) => {
  for (const url of ['https://a/b.mp4', 'http://127.0.0.1:9000/x', 's3://bucket/key']) t.ok(looksLikeUrl(url), url)
  for (const path of ['clip.mp4', './clip.mp4', '/tmp/clip.mp4', 'C:clip.mp4', 'https:/x']) t.notOk(looksLikeUrl(path), path)
})

t.test('the environment wins over the config file, key by key', async (t) => {
  const file = { url: 'http://file:1', api_key: 'ffsk_file' }
  t.match(resolveConfig({}, file, '/c'), { url: 'http://file:1', apiKey: 'ffsk_file', sources: { url: 'config file', apiKey: 'config file' } })
  t.match(resolveConfig({ FFKUBE_API_KEY: 'ffsk_env' }, file, '/c'), { url: 'http://file:1', apiKey: 'ffsk_env', sources: { url: 'config file', apiKey: 'FFKUBE_API_KEY' } })
  t.match(resolveConfig({ FFKUBE_URL: '' }, null, '/c'), { url: null, apiKey: null, sources: { url: 'unset', apiKey: 'unset' } })
})

t.test('the stage shown is the processing stage while PROCESSING, else the status', async (t) => {
  t.equal(stageOf({ status: 'PROCESSING', processing_stage: 'UPLOADING' }), 'UPLOADING')
  t.equal(stageOf({ status: 'PROCESSING', processing_stage: null }), 'PROCESSING')
  t.equal(stageOf({ status: 'SUCCESS', processing_stage: null }), 'SUCCESS')
})

const at = (status: CommandPollResponse['status'], progress: number | null = null) => ({ command_id: 'c', status, progress, processing_stage: null }) as unknown as CommandPollResponse

/** A stream whose first read fails with `error`. */
const failing = (error: Error): AsyncIterable<CommandEvent> => ({ [Symbol.asyncIterator]: () => ({ next: () => Promise.reject(error) }) })

t.test('followCommand', async (t) => {
  t.test('resumes a dropped stream with the last event id and ends at the terminal event', async (t) => {
    const resumedFrom: (string | undefined)[] = []
    const seen: string[] = []
    const streams: CommandEvent[][] = [
      [{ id: '1', command: at('QUEUED') }, { id: '2', command: at('PROCESSING', 40) }],
      [{ id: '3', command: at('SUCCESS', 100) }],
    ]
    const final = await followCommand('c', {
      events: (_id, lastEventId) => {
        resumedFrom.push(lastEventId)
        const events = streams.shift()!
        return (async function* () {
          yield* events
          if (streams.length > 0) throw new TypeError('terminated')
        })()
      },
      get: async () => t.fail('no GET while the stream works') as never,
      sleep: async () => undefined,
      onUpdate: (command) => seen.push(`${command.status} ${command.progress}`),
      signal: new AbortController().signal,
    })
    t.equal(final.status, 'SUCCESS')
    t.same(resumedFrom, [undefined, '2'])
    t.same(seen, ['QUEUED null', 'PROCESSING 40', 'SUCCESS 100'])
  })

  t.test('falls back to polling after the stream fails repeatedly; a refused key is not retried', async (t) => {
    let attempts = 0
    const polls = [at('PROCESSING', 10), at('FAILED')]
    const fallbacks: string[] = []
    const final = await followCommand('c', {
      events: () => {
        attempts += 1
        return failing(new TypeError('fetch failed'))
      },
      get: async () => polls.shift()!,
      sleep: async () => undefined,
      onUpdate: () => undefined,
      onFallback: (reason) => fallbacks.push(reason),
      signal: new AbortController().signal,
    })
    t.equal(final.status, 'FAILED')
    t.equal(attempts, STREAM_ATTEMPTS)
    t.same(fallbacks, ['fetch failed'])

    let refused = 0
    const unauthorized = followCommand('c', {
      events: () => {
        refused += 1
        return failing(new ApiError(401, 'UNAUTHORIZED', 'invalid API key'))
      },
      get: async () => t.fail('no polling after a 401') as never,
      sleep: async () => undefined,
      onUpdate: () => undefined,
      signal: new AbortController().signal,
    })
    await t.rejects(unauthorized, { name: 'ApiError', message: 'invalid API key' })
    t.equal(refused, 1)
  })
})
