import t from 'tap'
import { startApi } from '../harness/api.js'

/**
 * Every body field of every route, sent with the wrong JSON type: the body is
 * validated as sent (no coercion of 7 into "7" or of a string into a
 * one-element array), refused with the status the spec gives the endpoint for
 * invalid field values, and the message names the field.
 */

const STRING = 7
const NOT_A_LIST = 'ffmpeg -i {{in_video}} {{out_small}}'
const NOT_A_MAP = ['in_video']
const NOT_A_BOOLEAN = 'true'

const ffmpegBody = {
  input_files: { in_video: 'https://media.example.com/in.mp4' },
  output_files: { out_small: 'small.mp4' },
  ffmpeg_command: 'ffmpeg -i {{in_video}} -vf scale=320:-2 {{out_small}}',
}
const commonFields: [string, unknown, (400 | 422)?][] = [
  ['metadata', NOT_A_MAP],
  ['webhook_url', STRING],
  ['storage_destination_id', STRING],
]
/** Both preset bodies (create, update) take these fields. */
const presetFields: [string, unknown][] = [
  ['name', STRING],
  ['description', STRING],
  ['command_type', STRING],
  ['ffmpeg_command', STRING],
  ['ffmpeg_commands', NOT_A_LIST],
  ['input_file_keys', 'in_video'],
  ['output_file_definitions', NOT_A_MAP],
  ['metadata', NOT_A_MAP],
]
const destination = {
  name: 'media',
  endpoint_url: 'https://s3.example.com',
  region: 'auto',
  bucket: 'media',
  credentials: { access_key_id: 'AKIAEXAMPLE', secret_access_key: 'secret' },
}
const sdPath = '/api/v1/storage-destinations/sd_0123456789abcdef0123456789abcdef'

interface Route {
  method: 'POST' | 'PUT' | 'PATCH'
  url: string
  /** The spec's status for an invalid field value on this endpoint. */
  status: 400 | 422
  valid: Record<string, unknown>
  /** field path (dots into objects), a value of the wrong JSON type, and the status where the spec names this fault apart */
  wrong: [string, unknown, (400 | 422)?][]
}

const routes: Route[] = [
  {
    method: 'POST',
    url: '/api/v1/run-ffmpeg-command',
    status: 400,
    valid: ffmpegBody,
    wrong: [['input_files', NOT_A_MAP], ['output_files', 'small.mp4'], ['ffmpeg_command', STRING], ['input_files.in_video', STRING], ['output_files.out_small', STRING], ...commonFields],
  },
  {
    method: 'POST',
    url: '/api/v1/run-chained-ffmpeg-commands',
    status: 400,
    valid: { input_files: ffmpegBody.input_files, output_files: ffmpegBody.output_files, ffmpeg_commands: [ffmpegBody.ffmpeg_command] },
    wrong: [['input_files', NOT_A_MAP], ['output_files', STRING], ['ffmpeg_commands', NOT_A_LIST], ['ffmpeg_commands.0', STRING], ...commonFields],
  },
  {
    method: 'POST',
    url: '/api/v1/run-multiple-ffmpeg-commands',
    status: 400,
    valid: { commands: [ffmpegBody] },
    // An element that is not a command body is the spec's 422 "invalid command structure".
    wrong: [['commands', { ...ffmpegBody }], ['commands.0', NOT_A_LIST, 422]],
  },
  {
    method: 'POST',
    url: '/api/v1/ytdlp-download',
    status: 422,
    valid: { input_urls: { in_talk: 'https://video.example.com/talk' } },
    wrong: [['input_urls', NOT_A_MAP], ['input_urls.in_talk', STRING], ['format_selector', 720], ...commonFields],
  },
  {
    method: 'POST',
    url: '/api/v1/run-ytdlp-command',
    status: 422,
    valid: { input_urls: { in_talk: 'https://video.example.com/talk' }, ffmpeg_command: '-i {{in_talk}} {{out_audio}}', output_files: { out_audio: 'talk.mp3' } },
    wrong: [['input_urls', NOT_A_MAP], ['format_selector', 720], ['ffmpeg_command', STRING], ['output_files', NOT_A_MAP], ...commonFields],
  },
  { method: 'POST', url: '/api/v1/files/store-file', status: 400, valid: { file_url: 'https://media.example.com/in.mp4' }, wrong: [['file_url', STRING]] },
  {
    method: 'POST',
    url: '/api/v1/presets',
    status: 400,
    valid: { name: 'small', ffmpeg_command: ffmpegBody.ffmpeg_command, input_file_keys: ['in_video'], output_file_definitions: ffmpegBody.output_files },
    wrong: [...presetFields, ['input_file_keys.0', STRING]],
  },
  {
    method: 'PUT',
    url: '/api/v1/presets/preset_0123456789abcdef0123456789abcdef',
    status: 400,
    valid: { name: 'small' },
    wrong: presetFields,
  },
  {
    method: 'POST',
    url: '/api/v1/presets/preset_0123456789abcdef0123456789abcdef/execute',
    status: 422,
    valid: { input_files: ffmpegBody.input_files },
    wrong: [['input_files', NOT_A_MAP], ['metadata', NOT_A_MAP], ['webhook_url', STRING]],
  },
  { method: 'PUT', url: '/api/v1/webhook-config', status: 422, valid: { url: 'https://hooks.example.com/ffkube' }, wrong: [['url', STRING], ['secret', STRING]] },
  { method: 'PUT', url: '/api/v1/ytdlp-cookies', status: 400, valid: { cookies: '.example.com\tTRUE\t/\tTRUE\t0\tsession\tvalue' }, wrong: [['cookies', STRING]] },
  {
    method: 'POST',
    url: '/api/v1/storage-destinations',
    status: 422,
    valid: destination,
    wrong: [
      ['name', STRING],
      ['endpoint_url', STRING],
      ['region', STRING],
      ['bucket', STRING],
      ['prefix', STRING],
      ['public_base_url', STRING],
      ['path_style', NOT_A_BOOLEAN],
      ['credentials', 'AKIAEXAMPLE:secret'],
      ['credentials.access_key_id', STRING],
      ['credentials.secret_access_key', STRING],
      ['credentials.session_token', STRING],
    ],
  },
  {
    method: 'PATCH',
    url: sdPath,
    status: 422,
    valid: { name: 'renamed' },
    wrong: [['name', STRING], ['prefix', STRING], ['public_base_url', STRING], ['path_style', NOT_A_BOOLEAN], ['credentials', STRING]],
  },
]

/** `body` with the value at a dotted path replaced (arrays by index). */
function withValue(body: Record<string, unknown>, path: string, value: unknown): Record<string, unknown> {
  const copy = structuredClone(body)
  const keys = path.split('.')
  let node: Record<string, unknown> = copy
  for (const key of keys.slice(0, -1)) {
    node[key] ??= {}
    node = node[key] as Record<string, unknown>
  }
  node[keys.at(-1)!] = value
  return copy
}

/** How the message names a field: `body.commands[0]`, `body.credentials.access_key_id`. */
const named = (path: string) => `body.${path.replace(/\.(\d+)(?=\.|$)/g, '[$1]')}`

t.test('a body field of the wrong JSON type is refused, not coerced', async (t) => {
  const api = await startApi(t)
  const { api_key } = await api.createAccount('business')

  for (const route of routes) {
    t.test(`${route.method} ${route.url}`, async (t) => {
      for (const [path, value, status = route.status] of route.wrong) {
        const res = await api.app.inject({ method: route.method, url: route.url, headers: { 'x-api-key': api_key }, payload: withValue(route.valid, path, value) })
        t.equal(res.statusCode, status, `${path}: ${JSON.stringify(value)} answers ${status}`)
        const body = res.json()
        t.equal(body.error, status === 400 ? 'INVALID_REQUEST' : 'VALIDATION_ERROR', `${path}: the spec's code`)
        t.ok(String(body.message).startsWith(named(path)), `${path}: the message names the field (${body.message})`)
      }
    })
  }
})

t.test('the examples of the issue: nothing is stored under a coerced type', async (t) => {
  const api = await startApi(t)
  const { api_key } = await api.createAccount('business')
  const call = (method: 'POST' | 'PUT' | 'GET', url: string, payload?: object) => api.app.inject({ method, url, headers: { 'x-api-key': api_key }, ...(payload ? { payload } : {}) })

  const chained = await call('POST', '/api/v1/run-chained-ffmpeg-commands', { ...ffmpegBody, ffmpeg_command: undefined, ffmpeg_commands: ffmpegBody.ffmpeg_command })
  t.equal(chained.statusCode, 400, 'a string is not a one-element ffmpeg_commands')
  const named7 = await call('POST', '/api/v1/presets', { name: 7, ffmpeg_command: ffmpegBody.ffmpeg_command, input_file_keys: ['in_video'], output_file_definitions: ffmpegBody.output_files })
  t.equal(named7.statusCode, 400, 'a preset name 7 is not stored as "7"')
  const presets = (await call('GET', '/api/v1/presets?limit=100')).json().presets as { name: string; is_system: boolean }[]
  t.same(presets.filter((p) => !p.is_system), [], 'no preset was created')

  const created = await call('POST', '/api/v1/presets', { name: 'small', ffmpeg_command: ffmpegBody.ffmpeg_command, input_file_keys: ['in_video'], output_file_definitions: ffmpegBody.output_files })
  t.equal(created.statusCode, 201)
  const { preset_id } = created.json()
  const update = await call('PUT', `/api/v1/presets/${preset_id}`, { input_file_keys: 'in_video' })
  t.equal(update.statusCode, 400, 'input_file_keys must be a list')
  const stored = (await call('GET', `/api/v1/presets/${preset_id}`)).json()
  t.same(stored.input_file_keys, ['in_video'], 'the preset is unchanged')

  const storeFile = await call('POST', '/api/v1/files/store-file', { file_url: 7 })
  t.equal(storeFile.statusCode, 400, 'file_url 7 is 400, not a 422 for the URL "7"')
  t.match(storeFile.json(), { error: 'INVALID_REQUEST', message: /^body\.file_url: must be a string/ })
})
