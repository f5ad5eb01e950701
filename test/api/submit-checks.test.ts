import t from 'tap'
import { startApi } from '../harness/api.js'

t.test('submit-time checks', async (t) => {
  t.test('the ffmpeg policy refuses at submit what the runner would refuse', async (t) => {
    const api = await startApi(t)
    const { api_key } = await api.createAccount('business')
    const post = (url: string, payload: object) => api.app.inject({ method: 'POST', url: `/api/v1${url}`, headers: { 'x-api-key': api_key }, payload })
    const hostile = [
      'ffmpeg -i /etc/passwd {{out_x}}',
      'ffmpeg -i {{in_v}} -f tee {{out_x}}',
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
