import t, { type Test } from 'tap'
import { startApi } from '../harness/api.js'

const VALID = {
  input_files: { in_video: 'https://media.example.com/clip.mp4' },
  output_files: { out_small: 'small.mp4' },
  ffmpeg_command: 'ffmpeg -i {{in_video}} -vf scale=640:-2 {{out_small}}',
}

t.test('command endpoints', async (t) => {
  const api = await startApi(t)
  const business = await api.createAccount('business')
  const free = await api.createAccount('free')
  const growth = await api.createAccount('growth')
  const post = (url: string, payload: unknown, key = business.api_key) =>
    api.app.inject({ method: 'POST', url: `/api/v1${url}`, headers: { 'x-api-key': key }, payload: payload as object })
  const get = (url: string, key = business.api_key) => api.app.inject({ method: 'GET', url: `/api/v1${url}`, headers: { 'x-api-key': key } })
  const expectError = async (t: Test, res: Awaited<ReturnType<typeof post>>, status: number, field: RegExp) => {
    t.equal(res.statusCode, status, res.body)
    const body = res.json()
    t.equal(body.error, { 400: 'INVALID_REQUEST', 403: 'FORBIDDEN', 404: 'NOT_FOUND', 409: 'CONFLICT', 422: 'VALIDATION_ERROR' }[status])
    t.match(body.message, field)
  }

  t.test('run-ffmpeg-command records a QUEUED command and returns its id', async (t) => {
    const res = await post('/run-ffmpeg-command', { ...VALID, metadata: { job: 'a', n: 2, ok: true } })
    t.equal(res.statusCode, 200, res.body)
    const { command_id } = res.json()
    t.match(command_id, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/)
    const poll = await get(`/commands/${command_id}`)
    t.equal(poll.statusCode, 200)
    t.same(poll.json(), {
      command_id,
      status: 'QUEUED',
      command_type: 'FFMPEG_COMMAND',
      total_processing_seconds: null,
      ffmpeg_command_run_seconds: null,
      metadata: { job: 'a', n: 2, ok: true },
      error_status: null,
      error_message: null,
      original_request: { input_files: VALID.input_files, output_files: VALID.output_files, ffmpeg_command: VALID.ffmpeg_command },
      progress: null,
      processing_stage: null,
    })
    const stored = await api.db.collection('commands').findOne({ _id: command_id })
    t.match(stored, { status: 'QUEUED', account_id: business.account_id, dispatch_state: 'waiting', dispatch_attempts: 0 }, 'record and dispatch intent in one document')
  })

  t.test('accepts the <<alias>> placeholder form', async (t) => {
    const res = await post('/run-ffmpeg-command', { ...VALID, ffmpeg_command: 'ffmpeg -i <<in_video>> -t 5 <<out_small>>' })
    t.equal(res.statusCode, 200, res.body)
  })

  t.test('metadata null reads back as null', async (t) => {
    const res = await post('/run-ffmpeg-command', { ...VALID, metadata: null })
    t.equal(res.statusCode, 200)
    t.equal((await get(`/commands/${res.json().command_id}`)).json().metadata, null)
  })

  const invalidRequests: [string, object, RegExp][] = [
    ['a missing input_files', { output_files: VALID.output_files, ffmpeg_command: VALID.ffmpeg_command }, /input_files is required/],
    ['a missing output_files', { input_files: VALID.input_files, ffmpeg_command: VALID.ffmpeg_command }, /output_files is required/],
    ['a missing ffmpeg_command', { input_files: VALID.input_files, output_files: VALID.output_files }, /ffmpeg_command is required/],
    ['an input alias without in_', { ...VALID, input_files: { video: 'https://a.example/x.mp4' } }, /input_files: key "video" must start with "in_"/],
    ['an output alias without out_', { ...VALID, output_files: { small: 'small.mp4' } }, /output_files: key "small" must start with "out_"/],
    ['an output filename with a path', { ...VALID, output_files: { out_small: '../etc/passwd' } }, /output_files.out_small: filename/],
    ['an output filename starting with a dash', { ...VALID, output_files: { out_small: '-y.mp4' } }, /must not start with a dash/],
    ['another program than ffmpeg', { ...VALID, ffmpeg_command: 'ffprobe -i {{in_video}} {{out_small}}' }, /ffmpeg_command: must begin with "ffmpeg", not "ffprobe"/],
    ['a placeholder naming no declared alias', { ...VALID, ffmpeg_command: 'ffmpeg -i {{in_other}} {{out_small}}' }, /placeholder \{\{in_other\}\} names no declared alias/],
    ['a declared output no placeholder uses', { ...VALID, output_files: { out_small: 'small.mp4', out_big: 'big.mp4' } }, /out_big is declared but no placeholder uses it/],
    ['an empty input map', { ...VALID, input_files: {} }, /input_files: at least 1 entry is required/],
    ['input_files of the wrong type', { ...VALID, input_files: 'https://a.example/x.mp4' }, /input_files/],
    ['an input ffmpeg would open itself (the runner’s argument policy)', { ...VALID, ffmpeg_command: 'ffmpeg -i {{in_video}} -i https://evil.example/x.mp4 {{out_small}}' }, /^ffmpeg_command: .*(URL|protocol)/],
    ['a write outside the work directory (the argument policy)', { ...VALID, ffmpeg_command: 'ffmpeg -i {{in_video}} {{out_small}} /etc/cron.d/x' }, /^ffmpeg_command: /],
  ]
  for (const [what, body, message] of invalidRequests) {
    t.test(`run-ffmpeg-command rejects ${what} with 400`, async (t) => expectError(t, await post('/run-ffmpeg-command', body), 400, message))
  }

  const unprocessable: [string, object, RegExp][] = [
    ['metadata with 11 keys', { ...VALID, metadata: Object.fromEntries(Array.from({ length: 11 }, (_, i) => [`k${i}`, i])) }, /metadata: at most 10 keys/],
    ['a metadata value that is an object', { ...VALID, metadata: { nested: { a: 1 } } }, /metadata.nested: must be a string, number or boolean/],
    ['an input URL that is not http(s)', { ...VALID, input_files: { in_video: 'ftp://a.example/x.mp4' } }, /input_files.in_video: must use http or https/],
    ['an input URL that is not a URL', { ...VALID, input_files: { in_video: 'not a url' } }, /input_files.in_video: must be an absolute/],
    ['a malformed storage_destination_id', { ...VALID, storage_destination_id: 'sd_nothex' }, /storage_destination_id/],
    ['a webhook_url that is not a URL', { ...VALID, webhook_url: 'mailto:a@b.c' }, /webhook_url/],
  ]
  for (const [what, body, message] of unprocessable) {
    t.test(`run-ffmpeg-command rejects ${what} with 422`, async (t) => expectError(t, await post('/run-ffmpeg-command', body), 422, message))
  }

  t.test('webhook_url and storage_destination_id are Business-only (403)', async (t) => {
    await expectError(t, await post('/run-ffmpeg-command', { ...VALID, webhook_url: 'https://hooks.example.com/x' }, growth.api_key), 403, /webhook_url: .*Business/)
    await expectError(t, await post('/run-ffmpeg-command', { ...VALID, storage_destination_id: `sd_${'a'.repeat(32)}` }, growth.api_key), 403, /Business/)
  })

  t.test('a Business account may set webhook_url', async (t) => {
    const res = await post('/run-ffmpeg-command', { ...VALID, webhook_url: 'https://hooks.example.com/x' })
    t.equal(res.statusCode, 200, res.body)
    const stored = await api.db.collection('commands').findOne({ _id: res.json().command_id })
    t.equal(stored?.webhook_url, 'https://hooks.example.com/x')
  })

  t.test('an unknown storage destination is 404, another account’s too, a disabled one 409', async (t) => {
    await expectError(t, await post('/run-ffmpeg-command', { ...VALID, storage_destination_id: `sd_${'b'.repeat(32)}` }), 404, /storage_destination_id/)
    const other = await api.createAccount('business')
    const theirs = await api.app.storageDestinations.create(other.account_id, destination('theirs'))
    await expectError(t, await post('/run-ffmpeg-command', { ...VALID, storage_destination_id: theirs._id }), 404, /storage_destination_id/)
    const mine = await api.app.storageDestinations.create(business.account_id, destination('mine'))
    const ok = await post('/run-ffmpeg-command', { ...VALID, storage_destination_id: mine._id })
    t.equal(ok.statusCode, 200, ok.body)
    const stored = await api.db.collection('commands').findOne({ _id: ok.json().command_id })
    t.equal(stored?.storage_destination_id, mine._id)
    await api.app.storageDestinations.disable(business.account_id, mine._id)
    await expectError(t, await post('/run-ffmpeg-command', { ...VALID, storage_destination_id: mine._id }), 409, /disabled/)
  })

  t.test('run-chained-ffmpeg-commands', async (t) => {
    const chained = {
      input_files: { in_video: 'https://media.example.com/clip.mp4' },
      output_files: { out_gif: 'preview.gif' },
      ffmpeg_commands: ['ffmpeg -i {{in_video}} -t 3 -vf fps=10,scale=320:-1 palette_src.mp4', 'ffmpeg -i palette_src.mp4 {{out_gif}}'],
    }
    t.test('records one CHAINED_COMMAND; a later command reads a plain filename an earlier one wrote', async (t) => {
      const res = await post('/run-chained-ffmpeg-commands', chained)
      t.equal(res.statusCode, 200, res.body)
      const poll = (await get(`/commands/${res.json().command_id}`)).json()
      t.equal(poll.command_type, 'CHAINED_COMMAND')
      t.same(poll.original_request, { input_files: chained.input_files, output_files: chained.output_files, ffmpeg_commands: chained.ffmpeg_commands })
    })
    t.test('rejects 11 commands with 422', async (t) => {
      const commands = Array.from({ length: 11 }, () => 'ffmpeg -i {{in_video}} {{out_gif}}')
      await expectError(t, await post('/run-chained-ffmpeg-commands', { ...chained, ffmpeg_commands: commands }), 422, /ffmpeg_commands: at most 10/)
    })
    t.test('rejects a malformed command with 400 naming its index', async (t) => {
      await expectError(t, await post('/run-chained-ffmpeg-commands', { ...chained, ffmpeg_commands: ['ffmpeg -i {{in_video}} {{out_gif}}', 'sh -c id'] }), 400, /ffmpeg_commands\[1\]: must begin with "ffmpeg"/)
    })
    t.test('rejects an empty or missing list with 400', async (t) => {
      await expectError(t, await post('/run-chained-ffmpeg-commands', { ...chained, ffmpeg_commands: [] }), 400, /ffmpeg_commands/)
      await expectError(t, await post('/run-chained-ffmpeg-commands', { input_files: chained.input_files, output_files: chained.output_files }), 400, /ffmpeg_commands is required/)
    })
    t.test('rejects excess metadata and a malformed destination id with 422', async (t) => {
      await expectError(t, await post('/run-chained-ffmpeg-commands', { ...chained, metadata: Object.fromEntries(Array.from({ length: 11 }, (_, i) => [`k${i}`, 'v'])) }), 422, /metadata/)
      await expectError(t, await post('/run-chained-ffmpeg-commands', { ...chained, storage_destination_id: 'nope' }), 422, /storage_destination_id/)
    })
    t.test('is Business-gated for webhook_url (403)', async (t) => {
      await expectError(t, await post('/run-chained-ffmpeg-commands', { ...chained, webhook_url: 'https://h.example.com' }, free.api_key), 403, /webhook_url/)
    })
    t.test('an unknown destination is 404', async (t) => {
      await expectError(t, await post('/run-chained-ffmpeg-commands', { ...chained, storage_destination_id: `sd_${'c'.repeat(32)}` }), 404, /storage_destination_id/)
    })
  })

  t.test('run-multiple-ffmpeg-commands', async (t) => {
    const second = { ...VALID, output_files: { out_thumb: 'thumb.jpg' }, ffmpeg_command: 'ffmpeg -i {{in_video}} -frames:v 1 {{out_thumb}}', metadata: { n: 2 } }
    t.test('records one MULTIPLE_COMMAND per element and returns ids in input order', async (t) => {
      const res = await post('/run-multiple-ffmpeg-commands', { commands: [VALID, second] })
      t.equal(res.statusCode, 200, res.body)
      const { command_ids } = res.json()
      t.equal(command_ids.length, 2)
      const first = (await get(`/commands/${command_ids[0]}`)).json()
      const other = (await get(`/commands/${command_ids[1]}`)).json()
      t.equal(first.command_type, 'MULTIPLE_COMMAND')
      t.equal(first.original_request.ffmpeg_command, VALID.ffmpeg_command)
      t.equal(other.original_request.ffmpeg_command, second.ffmpeg_command)
      t.same(other.metadata, { n: 2 })
    })
    t.test('rejects 11 commands with 422', async (t) => {
      await expectError(t, await post('/run-multiple-ffmpeg-commands', { commands: Array.from({ length: 11 }, () => VALID) }), 422, /commands: at most 10/)
    })
    t.test('rejects an element of invalid structure with 422 naming it, and records nothing', async (t) => {
      const before = await api.db.collection('commands').countDocuments()
      await expectError(t, await post('/run-multiple-ffmpeg-commands', { commands: [VALID, { input_files: VALID.input_files }] }), 422, /commands\[1\]\.output_files is required/)
      await expectError(t, await post('/run-multiple-ffmpeg-commands', { commands: [VALID, { ...VALID, ffmpeg_command: 'rm -rf /' }] }), 422, /commands\[1\]\.ffmpeg_command/)
      await expectError(t, await post('/run-multiple-ffmpeg-commands', { commands: ['ffmpeg'] }), 422, /commands\[0\]: must be an object/)
      await expectError(t, await post('/run-multiple-ffmpeg-commands', { commands: [{ ...VALID, ffmpeg_command: 'ffmpeg -f lavfi -i {{in_video}} {{out_small}}' }] }), 422, /commands\[0\]\.ffmpeg_command: /)
      t.equal(await api.db.collection('commands').countDocuments(), before)
    })
    t.test('rejects a body without commands with 400', async (t) => {
      await expectError(t, await post('/run-multiple-ffmpeg-commands', { command: [] }), 400, /commands is required/)
    })
    t.test('checks each element’s destination: malformed 422, unknown 404, Business-only 403', async (t) => {
      await expectError(t, await post('/run-multiple-ffmpeg-commands', { commands: [VALID, { ...VALID, storage_destination_id: 'x' }] }), 422, /storage_destination_id/)
      await expectError(t, await post('/run-multiple-ffmpeg-commands', { commands: [{ ...VALID, storage_destination_id: `sd_${'d'.repeat(32)}` }] }), 404, /storage_destination_id/)
      await expectError(t, await post('/run-multiple-ffmpeg-commands', { commands: [{ ...VALID, webhook_url: 'https://h.example.com' }] }, growth.api_key), 403, /commands\[0\]\.webhook_url|webhook_url/)
    })
  })

  t.test('ytdlp-download', async (t) => {
    const body = { input_urls: { in_talk: 'https://video.example.com/watch?v=abc' } }
    t.test('records a YTDLP_COMMAND with format best by default', async (t) => {
      const res = await post('/ytdlp-download', body, growth.api_key)
      t.equal(res.statusCode, 200, res.body)
      const stored = await api.db.collection('commands').findOne({ _id: res.json().command_id })
      t.match(stored, { command_type: 'YTDLP_COMMAND', ytdlp: { format_selector: 'best' }, input_files: body.input_urls, ffmpeg_commands: [] })
      t.same((await get(`/commands/${res.json().command_id}`, growth.api_key)).json().original_request, { input_files: body.input_urls, output_files: {} })
    })
    t.test('accepts every format_selector value of the spec', async (t) => {
      for (const format_selector of ['best', '2160p', '1440p', '1080p', '720p', '480p', '360p', 'audio_only', 'worst']) {
        t.equal((await post('/ytdlp-download', { ...body, format_selector }, growth.api_key)).statusCode, 200, format_selector)
      }
    })
    t.test('is refused on the free plan with 403', async (t) => {
      await expectError(t, await post('/ytdlp-download', body, free.api_key), 403, /video downloads/)
    })
    const bad: [string, object, RegExp][] = [
      ['missing input_urls', {}, /input_urls is required/],
      ['a key without in_', { input_urls: { talk: 'https://v.example.com/1' } }, /input_urls: key "talk" must start with "in_"/],
      ['an invalid URL', { input_urls: { in_talk: 'javascript:alert(1)' } }, /input_urls.in_talk: must use http or https/],
      ['ffmpeg_command present', { ...body, ffmpeg_command: 'ffmpeg -i {{in_talk}} x.mp3' }, /ffmpeg_command: must not be sent/],
      ['output_files present', { ...body, output_files: { out_a: 'a.mp4' } }, /output_files: must not be sent/],
      ['an unknown format_selector', { ...body, format_selector: '4k' }, /format_selector/],
      ['excess metadata', { ...body, metadata: Object.fromEntries(Array.from({ length: 11 }, (_, i) => [`k${i}`, i])) }, /metadata/],
      ['a malformed destination id', { ...body, storage_destination_id: 'sd_1' }, /storage_destination_id/],
      ['obviously unavailable videos, listing each', { input_urls: { in_a: 'https://youtu.be/nope', in_b: 'https://www.youtube.com/watch?v=dQw4w9WgXcQ', in_c: 'https://www.youtube.com/watch?v=bad' } }, /in_a: .*; in_c: /],
    ]
    for (const [what, payload, message] of bad) {
      t.test(`rejects ${what} with 422`, async (t) => expectError(t, await post('/ytdlp-download', payload, growth.api_key), 422, message))
    }
    t.test('webhook_url needs Business (403); a Business account’s unknown destination is 404', async (t) => {
      await expectError(t, await post('/ytdlp-download', { ...body, webhook_url: 'https://h.example.com' }, growth.api_key), 403, /webhook_url/)
      await expectError(t, await post('/ytdlp-download', { ...body, storage_destination_id: `sd_${'e'.repeat(32)}` }), 404, /storage_destination_id/)
    })
  })

  t.test('run-ytdlp-command', async (t) => {
    const urls = { in_talk: 'https://video.example.com/watch?v=abc' }
    t.test('without ffmpeg_command behaves as a download', async (t) => {
      const res = await post('/run-ytdlp-command', { input_urls: urls }, growth.api_key)
      t.equal(res.statusCode, 200, res.body)
      const stored = await api.db.collection('commands').findOne({ _id: res.json().command_id })
      t.match(stored, { command_type: 'YTDLP_COMMAND', ffmpeg_commands: [], output_files: {} })
    })
    t.test('with ffmpeg_command keeps the arguments and tolerates a leading "ffmpeg"', async (t) => {
      for (const ffmpeg_command of ['-i {{in_talk}} -vn {{out_audio}}', 'ffmpeg -i {{in_talk}} -vn {{out_audio}}']) {
        const res = await post('/run-ytdlp-command', { input_urls: urls, ffmpeg_command, output_files: { out_audio: 'talk.mp3' } }, growth.api_key)
        t.equal(res.statusCode, 200, res.body)
        const stored = await api.db.collection('commands').findOne({ _id: res.json().command_id })
        t.same(stored?.ffmpeg_commands, ['-i {{in_talk}} -vn {{out_audio}}'])
        t.equal(stored?.original_request.ffmpeg_command, ffmpeg_command, 'original_request keeps the string as sent')
      }
    })
    const bad: [string, object, RegExp][] = [
      ['missing input_urls', { ffmpeg_command: '-i x' }, /input_urls is required/],
      ['a bad key prefix', { input_urls: { talk: 'https://v.example.com/1' } }, /must start with "in_"/],
      ['a bad output key prefix', { input_urls: urls, ffmpeg_command: '-i {{in_talk}} {{audio}}', output_files: { audio: 'a.mp3' } }, /must start with "out_"/],
      ['an invalid URL', { input_urls: { in_talk: 'http://' } }, /input_urls.in_talk/],
      ['ffmpeg_command without output_files', { input_urls: urls, ffmpeg_command: '-i {{in_talk}} a.mp3' }, /output_files: required when ffmpeg_command/],
      ['a placeholder naming no declared alias', { input_urls: urls, ffmpeg_command: '-i {{in_other}} {{out_a}}', output_files: { out_a: 'a.mp3' } }, /names no declared alias/],
      ['a declared output that is not used', { input_urls: urls, ffmpeg_command: '-i {{in_talk}} {{out_a}}', output_files: { out_a: 'a.mp3', out_b: 'b.mp3' } }, /out_b is declared/],
      ['arguments the runner’s policy refuses', { input_urls: urls, ffmpeg_command: '-i {{in_talk}} -i /etc/passwd {{out_a}}', output_files: { out_a: 'a.mp3' } }, /^ffmpeg_command: /],
      ['excess metadata', { input_urls: urls, metadata: Object.fromEntries(Array.from({ length: 11 }, (_, i) => [`k${i}`, i])) }, /metadata/],
      ['a malformed destination id', { input_urls: urls, storage_destination_id: 'sd_' }, /storage_destination_id/],
    ]
    for (const [what, payload, message] of bad) {
      t.test(`rejects ${what} with 422`, async (t) => expectError(t, await post('/run-ytdlp-command', payload, growth.api_key), 422, message))
    }
    t.test('is refused on the free plan with 403', async (t) => {
      await expectError(t, await post('/run-ytdlp-command', { input_urls: urls }, free.api_key), 403, /video downloads/)
    })
    t.test('an unknown destination is 404', async (t) => {
      await expectError(t, await post('/run-ytdlp-command', { input_urls: urls, storage_destination_id: `sd_${'f'.repeat(32)}` }), 404, /storage_destination_id/)
    })
  })
})

function destination(name: string) {
  return {
    name,
    endpoint_url: 'https://s3.example.com',
    region: 'auto',
    bucket: 'media',
    prefix: 'out',
    public_base_url: null,
    path_style: false,
    credentials: { access_key_id: 'AKIAEXAMPLEKEY', secret_access_key: 'secret' },
  }
}
