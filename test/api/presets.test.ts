import t, { type Test } from 'tap'
import { SYSTEM_PRESETS, systemPresetId } from '../../api/presets/system-presets.js'
import { startApi } from '../harness/api.js'

const PRESET = {
  name: 'Half size',
  description: 'Scales to half the width',
  input_file_keys: ['in_video'],
  output_file_definitions: { out_half: 'half.mp4' },
  ffmpeg_command: 'ffmpeg -i {{in_video}} -vf scale=iw/2:-2 {{out_half}}',
  metadata: { team: 'video', priority: 1 },
}

t.test('preset endpoints', async (t) => {
  let now = new Date('2026-03-01T00:00:00Z')
  const api = await startApi(t, { clock: () => now })
  const mine = await api.createAccount('growth')
  const other = await api.createAccount('business')
  const call = (method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, payload?: object, key = mine.api_key) =>
    api.app.inject({ method, url: `/api/v1${url}`, headers: { 'x-api-key': key }, ...(payload ? { payload } : {}) })
  const expectError = async (t: Test, res: Awaited<ReturnType<typeof call>>, status: number, message: RegExp) => {
    t.equal(res.statusCode, status, res.body)
    t.equal(res.json().error, { 400: 'INVALID_REQUEST', 403: 'FORBIDDEN', 404: 'NOT_FOUND', 422: 'VALIDATION_ERROR' }[status])
    t.match(res.json().message, message)
  }
  const tick = () => (now = new Date(now.getTime() + 1_000))

  let presetId = ''
  t.test('creates an FFMPEG_COMMAND preset by default and answers 201 with the PresetResponse', async (t) => {
    tick()
    const res = await call('POST', '/presets', PRESET)
    t.equal(res.statusCode, 201, res.body)
    presetId = res.json().preset_id
    t.match(presetId, /^preset_[0-9a-f]{32}$/)
    t.same(res.json(), {
      preset_id: presetId,
      name: PRESET.name,
      description: PRESET.description,
      is_system: false,
      command_type: 'FFMPEG_COMMAND',
      ffmpeg_command: PRESET.ffmpeg_command,
      ffmpeg_commands: null,
      input_file_keys: ['in_video'],
      output_file_definitions: { out_half: 'half.mp4' },
      metadata: { team: 'video', priority: 1 },
      created_at: now.toISOString(),
      updated_at: now.toISOString(),
    })
  })

  t.test('creates CHAINED_COMMAND and MULTIPLE_COMMAND presets from ffmpeg_commands', async (t) => {
    tick()
    const chained = await call('POST', '/presets', {
      name: 'Trim then scale',
      command_type: 'CHAINED_COMMAND',
      input_file_keys: ['in_video'],
      output_file_definitions: { out_small: 'small.mp4' },
      ffmpeg_commands: ['ffmpeg -i {{in_video}} -t 10 trimmed.mp4', 'ffmpeg -i trimmed.mp4 -vf scale=320:-2 {{out_small}}'],
    })
    t.equal(chained.statusCode, 201, chained.body)
    t.equal(chained.json().ffmpeg_command, null)
    tick()
    const multiple = await call('POST', '/presets', {
      name: 'Poster and audio',
      command_type: 'MULTIPLE_COMMAND',
      input_file_keys: ['in_video'],
      output_file_definitions: { out_poster: 'poster.jpg', out_audio: 'audio.m4a' },
      ffmpeg_commands: ['ffmpeg -i {{in_video}} -frames:v 1 {{out_poster}}', 'ffmpeg -i {{in_video}} -vn -c:a aac {{out_audio}}'],
    })
    t.equal(multiple.statusCode, 201, multiple.body)
  })

  const invalid: [string, object, number, RegExp][] = [
    ['a missing name', { ...PRESET, name: undefined }, 400, /name is required/],
    ['missing input_file_keys', { ...PRESET, input_file_keys: undefined }, 400, /input_file_keys is required/],
    ['an input key without in_', { ...PRESET, input_file_keys: ['video'] }, 400, /input_file_keys\[0\]: must start with "in_"/],
    ['an output alias without out_', { ...PRESET, output_file_definitions: { half: 'half.mp4' } }, 400, /must start with "out_"/],
    ['a malformed command', { ...PRESET, ffmpeg_command: 'bash -c x' }, 400, /ffmpeg_command: must begin with "ffmpeg"/],
    ['a placeholder naming no input key', { ...PRESET, ffmpeg_command: 'ffmpeg -i {{in_other}} {{out_half}}' }, 400, /names no declared alias/],
    ['ffmpeg_commands on an FFMPEG_COMMAND preset', { ...PRESET, ffmpeg_commands: ['ffmpeg -i {{in_video}} {{out_half}}'] }, 400, /ffmpeg_commands: only for/],
    ['an unknown command_type', { ...PRESET, command_type: 'YTDLP_COMMAND' }, 400, /command_type/],
    ['metadata with 11 keys', { ...PRESET, metadata: Object.fromEntries(Array.from({ length: 11 }, (_, i) => [`k${i}`, i])) }, 422, /metadata: at most 10/],
    ['FFMPEG_COMMAND without ffmpeg_command', { ...PRESET, ffmpeg_command: undefined }, 422, /ffmpeg_command: required when command_type is FFMPEG_COMMAND/],
    ['CHAINED_COMMAND without ffmpeg_commands', { ...PRESET, ffmpeg_command: undefined, command_type: 'CHAINED_COMMAND' }, 422, /ffmpeg_commands: required/],
    ['MULTIPLE_COMMAND without ffmpeg_commands', { ...PRESET, ffmpeg_command: undefined, command_type: 'MULTIPLE_COMMAND' }, 422, /ffmpeg_commands: required/],
    [
      'a MULTIPLE_COMMAND whose commands write the same output',
      { ...PRESET, ffmpeg_command: undefined, command_type: 'MULTIPLE_COMMAND', ffmpeg_commands: [PRESET.ffmpeg_command, PRESET.ffmpeg_command] },
      400,
      /already written by ffmpeg_commands\[0\]/,
    ],
  ]
  for (const [what, body, status, message] of invalid) {
    t.test(`create rejects ${what} with ${status}`, async (t) => expectError(t, await call('POST', '/presets', body), status, message))
  }

  t.test('lists system presets first, then the account’s newest first, with limit and offset', async (t) => {
    const res = await call('GET', '/presets')
    t.equal(res.statusCode, 200)
    const { presets, limit, offset } = res.json()
    t.equal(limit, 50)
    t.equal(offset, 0)
    const system = SYSTEM_PRESETS.length
    t.ok(presets.slice(0, system).every((p: { is_system: boolean }) => p.is_system), 'system presets first')
    t.same(presets.slice(system).map((p: { name: string }) => p.name), ['Poster and audio', 'Trim then scale', 'Half size'])
    const page = (await call('GET', `/presets?limit=2&offset=${system}`)).json()
    t.same(page.presets.map((p: { name: string }) => p.name), ['Poster and audio', 'Trim then scale'])
    const theirs = (await call('GET', '/presets', undefined, other.api_key)).json().presets
    t.equal(theirs.length, system, 'another account sees only the system presets')
    t.equal((await call('GET', '/presets?limit=101')).statusCode, 400)
  })

  t.test('gets one preset; system presets are readable by all, another account’s is 404', async (t) => {
    t.equal((await call('GET', `/presets/${presetId}`)).json().name, 'Half size')
    const system = await call('GET', `/presets/${systemPresetId('mp3-extract')}`, undefined, other.api_key)
    t.equal(system.statusCode, 200)
    t.match(system.json(), { is_system: true, name: 'Extract audio as MP3' })
    await expectError(t, await call('GET', `/presets/${presetId}`, undefined, other.api_key), 404, /presetId/)
  })

  t.test('updates any subset; metadata is replaced whole', async (t) => {
    tick()
    const res = await call('PUT', `/presets/${presetId}`, { name: 'Half size v2', metadata: { owner: 'ana' } })
    t.equal(res.statusCode, 200, res.body)
    t.match(res.json(), { name: 'Half size v2', metadata: { owner: 'ana' }, ffmpeg_command: PRESET.ffmpeg_command, updated_at: now.toISOString() })
    t.same(res.json().metadata, { owner: 'ana' })
    t.not(res.json().created_at, res.json().updated_at)
  })

  t.test('an update switching the command type drops the old type’s command', async (t) => {
    const created = (await call('POST', '/presets', PRESET)).json()
    const res = await call('PUT', `/presets/${created.preset_id}`, { command_type: 'CHAINED_COMMAND', ffmpeg_commands: [PRESET.ffmpeg_command] })
    t.equal(res.statusCode, 200, res.body)
    t.match(res.json(), { command_type: 'CHAINED_COMMAND', ffmpeg_command: null, ffmpeg_commands: [PRESET.ffmpeg_command] })
    await expectError(t, await call('PUT', `/presets/${created.preset_id}`, { command_type: 'FFMPEG_COMMAND' }), 422, /ffmpeg_command: required/)
  })

  t.test('update rejects no fields (400), invalid values (400), excess metadata (422)', async (t) => {
    await expectError(t, await call('PUT', `/presets/${presetId}`, {}), 400, /at least one of name/)
    await expectError(t, await call('PUT', `/presets/${presetId}`, { input_file_keys: ['bad'] }), 400, /input_file_keys/)
    await expectError(t, await call('PUT', `/presets/${presetId}`, { name: '' }), 400, /name/)
    await expectError(t, await call('PUT', `/presets/${presetId}`, { metadata: Object.fromEntries(Array.from({ length: 11 }, (_, i) => [`k${i}`, i])) }), 422, /metadata/)
  })

  t.test('update and delete answer 404 for system presets, another account’s and missing ones', async (t) => {
    const system = systemPresetId('h264-720p')
    await expectError(t, await call('PUT', `/presets/${system}`, { name: 'mine now' }), 404, /presetId/)
    await expectError(t, await call('DELETE', `/presets/${system}`), 404, /presetId/)
    await expectError(t, await call('PUT', `/presets/${presetId}`, { name: 'theirs' }, other.api_key), 404, /presetId/)
    await expectError(t, await call('DELETE', `/presets/${presetId}`, undefined, other.api_key), 404, /presetId/)
    await expectError(t, await call('DELETE', '/presets/preset_00000000000000000000000000000000'), 404, /presetId/)
  })

  t.test('execute creates a command from the preset with merged metadata', async (t) => {
    const res = await call('POST', `/presets/${presetId}/execute`, { input_files: { in_video: 'https://media.example.com/a.mp4' }, metadata: { run: 7 } })
    t.equal(res.statusCode, 200, res.body)
    t.same(Object.keys(res.json()), ['command_id'])
    const poll = (await call('GET', `/commands/${res.json().command_id}`)).json()
    t.match(poll, {
      status: 'QUEUED',
      command_type: 'FFMPEG_COMMAND',
      metadata: { owner: 'ana', run: 7 },
      original_request: { input_files: { in_video: 'https://media.example.com/a.mp4' }, output_files: { out_half: 'half.mp4' }, ffmpeg_command: PRESET.ffmpeg_command },
    })
  })

  t.test('executing a system preset works for any account; a MULTIPLE_COMMAND preset creates one command per string', async (t) => {
    const res = await call('POST', `/presets/${systemPresetId('h264-renditions')}/execute`, { input_files: { in_video: 'https://media.example.com/a.mp4' } }, other.api_key)
    t.equal(res.statusCode, 200, res.body)
    const { command_id, command_ids } = res.json()
    t.equal(command_ids.length, 3)
    t.equal(command_id, command_ids[0])
    const second = (await call('GET', `/commands/${command_ids[1]}`, undefined, other.api_key)).json()
    t.match(second, { command_type: 'MULTIPLE_COMMAND', original_request: { output_files: { out_720p: 'video-720p.mp4' } } })
    t.same(Object.keys(second.original_request.output_files), ['out_720p'], 'each command gets only the outputs it writes')
  })

  const executeErrors: [string, object, RegExp][] = [
    ['a missing input key', { input_files: { in_other: 'https://a.example/v.mp4' } }, /missing in_video/],
    ['an extra input key', { input_files: { in_video: 'https://a.example/v.mp4', in_extra: 'https://a.example/x.mp4' } }, /unexpected in_extra/],
    ['missing input_files', {}, /input_files is required/],
    ['an invalid URL', { input_files: { in_video: 'file:///etc/passwd' } }, /input_files.in_video/],
    ['metadata over 10 keys after merging', { input_files: { in_video: 'https://a.example/v.mp4' }, metadata: Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`k${i}`, i])) }, /after merging/],
  ]
  for (const [what, body, message] of executeErrors) {
    t.test(`execute rejects ${what} with 422`, async (t) => expectError(t, await call('POST', `/presets/${presetId}/execute`, body), 422, message))
  }

  t.test('execute: webhook_url is Business-only (403); another account’s preset is 404', async (t) => {
    const body = { input_files: { in_video: 'https://a.example/v.mp4' }, webhook_url: 'https://hooks.example.com/done' }
    await expectError(t, await call('POST', `/presets/${presetId}/execute`, body), 403, /webhook_url/)
    await expectError(t, await call('POST', `/presets/${presetId}/execute`, body, other.api_key), 404, /presetId/)
    const business = (await call('POST', `/presets/${systemPresetId('mp3-extract')}/execute`, body, other.api_key))
    t.equal(business.statusCode, 200, business.body)
  })

  t.test('delete removes the account’s preset', async (t) => {
    const res = await call('DELETE', `/presets/${presetId}`)
    t.equal(res.statusCode, 200)
    t.same(res.json(), { deleted: true, preset_id: presetId })
    t.equal((await call('GET', `/presets/${presetId}`)).statusCode, 404)
  })

  t.test('seeding system presets again changes nothing', async (t) => {
    const before = await api.db.collection('presets').find({ is_system: true }).sort({ _id: 1 }).toArray()
    tick()
    await api.app.presets.seedSystemPresets()
    const after = await api.db.collection('presets').find({ is_system: true }).sort({ _id: 1 }).toArray()
    t.same(after, before)
    t.equal(after.length, SYSTEM_PRESETS.length)
  })
})
