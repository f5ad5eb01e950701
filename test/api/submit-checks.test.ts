import t from 'tap'
import { startApi } from '../harness/api.js'

t.test('submit-time checks', async (t) => {
  t.test('the ffmpeg policy refuses at submit what the runner would refuse', async (t) => {
    const api = await startApi(t)
    const { api_key } = await api.createAccount('business')
    const post = (url: string, payload: object) => api.app.inject({ method: 'POST', url: `/api/v1${url}`, headers: { 'x-api-key': api_key }, payload })
    const hostile = [
      'ffmpeg -i /etc/passwd {{out_x}}',
      "ffmpeg -i {{in_v}} -f tee '[f=mp4]/tmp/x.mp4|{{out_x}}'",
      'ffmpeg -i concat:{{in_v}}|{{in_v}} {{out_x}}',
      'ffmpeg -i {{in_v}} -vf movie=/etc/passwd {{out_x}}',
      'ffmpeg -i {{in_v}} -filter_script /etc/passwd {{out_x}}',
      'ffmpeg -i {{in_v}} {{out_x}} /tmp/leak.mp4',
    ]
    for (const command of hostile) {
      const res = await post('/run-ffmpeg-command', { input_files: { in_v: 'https://media.example.com/a.mp4' }, output_files: { out_x: 'x.mp4' }, ffmpeg_command: command })
      t.equal(res.statusCode, 400, `${command}: ${res.body}`)
    }
    const commands = await api.db.collection('commands').countDocuments({})
    t.equal(commands, 0, 'nothing refused was recorded')
  })

  t.test('arguments ffmpeg could not be given, or that would exhaust the host, are refused at submit', async (t) => {
    const api = await startApi(t)
    const { api_key } = await api.createAccount('business')
    const post = (url: string, payload: object) => api.app.inject({ method: 'POST', url: `/api/v1${url}`, headers: { 'x-api-key': api_key }, payload })
    const files = { input_files: { in_v: 'https://media.example.com/a.mp4' }, output_files: { out_x: 'x.mp4' } }
    const cases: Array<[string, number, RegExp | null]> = [
      ['ffmpeg -i {{in_v}} -metadata "title=a\u0000b" {{out_x}}', 400, /ffmpeg_command: .*control characters/],
      ['ffmpeg -i {{in_v}} -metadata "title=a\nb" {{out_x}}', 400, /control characters/],
      ['ffmpeg -i {{in_v}} -metadata "title=\u001b[2J" {{out_x}}', 400, /control characters/],
      ['ffmpeg -i {{in_v}} -threads 100000 {{out_x}}', 400, /-threads 100000: .*from 0 \(automatic\) to 16/],
      ['ffmpeg -i {{in_v}} -threads:v 1e9 {{out_x}}', 400, /-threads:v 1e9/],
      ['ffmpeg -filter_threads 17 -i {{in_v}} {{out_x}}', 400, /-filter_threads 17/],
      ['ffmpeg -filter_complex_threads 0x40 -i {{in_v}} {{out_x}}', 400, /-filter_complex_threads 0x40/],
      ['ffmpeg -i {{in_v}} -threads 4 {{out_x}}', 200, null],
      ['ffmpeg -filter_threads 0 -i {{in_v}} -threads 16 {{out_x}}', 200, null],
      // FFmpeg 8 reads -autorotate as a flag: the word after it is not its value.
      ['ffmpeg -autorotate -i {{in_v}} -c copy {{out_x}}', 200, null],
      ['ffmpeg -noautorotate -i {{in_v}} -c copy {{out_x}}', 200, null],
    ]
    for (const [command, status, message] of cases) {
      const res = await post('/run-ffmpeg-command', { ...files, ffmpeg_command: command })
      t.equal(res.statusCode, status, `${JSON.stringify(command)}: ${res.body}`)
      if (message) t.match(res.json(), { error: 'INVALID_REQUEST', message }, JSON.stringify(command))
    }
    const ytdlp = await post('/run-ytdlp-command', {
      input_urls: { in_v: 'https://media.example.com/watch?v=1' },
      output_files: { out_x: 'x.mp4' },
      ffmpeg_command: '-i {{in_v}} -metadata "title=a\u0000b" {{out_x}}',
    })
    t.equal(ytdlp.statusCode, 422, 'run-ytdlp-command refuses it with its own status')
    t.match(ytdlp.json().message, /control characters/)
    const url = await post('/run-ffmpeg-command', { ...files, input_files: { in_v: 'https://media.example.com/a b\u0000.mp4' }, ffmpeg_command: 'ffmpeg -i {{in_v}} {{out_x}}' })
    t.equal(url.statusCode, 422, 'an input URL with a space or a control character is refused, not rewritten')
    t.match(url.json().message, /input_files\.in_v: must not contain spaces or control characters/)
    const metadata = await post('/run-ffmpeg-command', { ...files, ffmpeg_command: 'ffmpeg -i {{in_v}} {{out_x}}', metadata: { 'a\u0000b': 'x' } })
    t.equal(metadata.statusCode, 422, 'a metadata key MongoDB cannot store is refused')
    t.match(metadata.json().message, /metadata: key "a\\u0000b" .*control character/)
    t.equal(await api.db.collection('commands').countDocuments({}), cases.filter(([, status]) => status === 200).length, 'only the accepted commands were recorded')
  })

  t.test('a webhook URL follows one rule, for the account and for a command', async (t) => {
    const strict = await startApi(t)
    const open = await startApi(t, { allowPrivateNetworks: true })
    for (const [name, api] of [['without ALLOW_PRIVATE_NETWORKS', strict], ['with ALLOW_PRIVATE_NETWORKS', open]] as const) {
      const { api_key } = await api.createAccount('business')
      const headers = { 'x-api-key': api_key }
      for (const url of ['http://10.0.0.1/hook', 'http://[::1]:8080/hook', 'http://169.254.169.254/latest', 'http://127.0.0.1./hook']) {
        const config = await api.app.inject({ method: 'PUT', url: '/api/v1/webhook-config', headers, payload: { url } })
        const command = await api.app.inject({
          method: 'POST',
          url: '/api/v1/run-ffmpeg-command',
          headers,
          payload: { input_files: { in_v: 'https://media.example.com/a.mp4' }, output_files: { out_x: 'x.mp4' }, ffmpeg_command: 'ffmpeg -i {{in_v}} {{out_x}}', webhook_url: url },
        })
        if (api === strict) {
          t.equal(config.statusCode, 422, `${name}: PUT /webhook-config ${url}`)
          t.equal(command.statusCode, 422, `${name}: webhook_url ${url}`)
          t.equal(command.json().message, config.json().message.replace(/^url:/, 'webhook_url:'), 'the same reason, naming each field')
        } else {
          t.equal(config.statusCode, 200, `${name}: PUT /webhook-config ${url}`)
          t.equal(command.statusCode, 200, `${name}: webhook_url ${url}`)
        }
      }
    }
  })

  t.test('yt-dlp endpoints answer 501 NOT_IMPLEMENTED when this host has no yt-dlp', async (t) => {
    const api = await startApi(t, { ytdlpAvailable: () => false })
    const business = await api.createAccount('business')
    const free = await api.createAccount('free')
    const post = (url: string, key: string, payload: object) => api.app.inject({ method: 'POST', url: `/api/v1${url}`, headers: { 'x-api-key': key }, payload })
    const download = await post('/ytdlp-download', business.api_key, { input_urls: { in_v: 'https://media.example.com/a.mp4' } })
    t.equal(download.statusCode, 501)
    t.match(download.json(), { error: 'NOT_IMPLEMENTED', message: /yt-dlp/ })
    const command = await post('/run-ytdlp-command', business.api_key, { input_urls: { in_v: 'https://media.example.com/a.mp4' } })
    t.equal(command.statusCode, 501)
    t.equal((await post('/ytdlp-download', free.api_key, { input_urls: {} })).statusCode, 403, 'the plan check comes first')
    const ffmpeg = await post('/run-ffmpeg-command', business.api_key, {
      input_files: { in_v: 'https://media.example.com/a.mp4' },
      output_files: { out_x: 'x.mp4' },
      ffmpeg_command: 'ffmpeg -i {{in_v}} {{out_x}}',
    })
    t.equal(ffmpeg.statusCode, 200, 'FFmpeg endpoints are unaffected')
  })
})
