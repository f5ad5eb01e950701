import { join } from 'node:path'
import t from 'tap'
import { makeClip, serveFiles } from '../harness/media.js'
import { scratchDir } from '../harness/scratch.js'
import { downloadAndProbe } from './download.js'
import { Client, serviceEnvironment, startService } from './service.js'

t.test('every command endpoint runs to SUCCESS in local mode, through HTTP', async (t) => {
  const dir = await scratchDir(t)
  const environment = await serviceEnvironment(t)
  const [service, clip] = await Promise.all([startService(t, environment), makeClip(join(dir, 'clip.mp4'), { seconds: 2, width: 640, height: 360 })])
  const media = await serveFiles(t, [clip])
  const api = new Client(service)
  const clipUrl = media.url(clip)

  t.test('run-ffmpeg-command: a transcode ends SUCCESS with probed, downloadable output', async (t) => {
    const { command_id } = await api.post('/run-ffmpeg-command', {
      input_files: { in_video: clipUrl },
      output_files: { out_small: 'small.mp4' },
      ffmpeg_command: 'ffmpeg -i {{in_video}} -vf scale=320:-2 -c:v libx264 -preset ultrafast -c:a copy {{out_small}}',
      metadata: { job: 'e2e' },
    })
    const done = await api.waitForCommand(command_id)
    t.equal(done.status, 'SUCCESS', JSON.stringify(done))
    t.equal(done.error_status, null)
    t.same(done.metadata, { job: 'e2e' })
    t.ok(done.total_processing_seconds > 0, 'total_processing_seconds is set')
    t.ok(done.ffmpeg_command_run_seconds > 0 && done.ffmpeg_command_run_seconds <= done.total_processing_seconds, 'ffmpeg time is part of the total')
    const out = done.output_files.out_small
    t.match(out, {
      filename: 'small.mp4', status: 'STORED', service_store_type: 'OUTPUT', storage_location: 'INTERNAL', is_deleted: false,
      width: 320, height: 180, file_type: 'video', file_format: 'mp4', codec: 'h264', pixel_format: 'yuv420p', mime_type: 'video/mp4',
    })
    t.ok(out.duration > 1.9 && out.duration < 2.2, `duration ${out.duration}`)
    t.ok(out.size_mbytes > 0)
    const downloaded = await downloadAndProbe(out.storage_url, dir, `${command_id}.mp4`)
    t.match(downloaded, { width: 320, height: 180, codec: 'h264' })
    t.equal(Math.round(downloaded.bytes / 1048576 * 1e6) / 1e6, out.size_mbytes, 'the download is the probed file')
    const file = await api.request('GET', `/files/${out.file_id}`)
    t.equal(file.status, 200)
    t.match(file.body, { file_id: out.file_id, status: 'STORED', service_store_type: 'OUTPUT', width: 320 })
  })

  t.test('run-chained-ffmpeg-commands: a later command reads a plain file an earlier one wrote', async (t) => {
    const { command_id } = await api.post('/run-chained-ffmpeg-commands', {
      input_files: { in_video: clipUrl },
      output_files: { out_gif: 'preview.gif' },
      ffmpeg_commands: [
        'ffmpeg -t 1 -i {{in_video}} -vf fps=5,scale=160:-1,palettegen palette.png',
        'ffmpeg -t 1 -i <<in_video>> -i palette.png -lavfi fps=5,scale=160:-1[x];[x][1:v]paletteuse <<out_gif>>',
      ],
    })
    const done = await api.waitForCommand(command_id)
    t.equal(done.status, 'SUCCESS', JSON.stringify(done))
    t.match(done.output_files.out_gif, { filename: 'preview.gif', width: 160, height: 90, codec: 'gif', mime_type: 'image/gif' })
    const downloaded = await downloadAndProbe(done.output_files.out_gif.storage_url, dir, `${command_id}.gif`)
    t.match(downloaded, { codec: 'gif', width: 160 })
    t.same(Object.keys(done.output_files), ['out_gif'], 'the intermediate palette is not an output')
  })

  t.test('run-multiple-ffmpeg-commands: independent commands run in parallel, each to SUCCESS', async (t) => {
    const { command_ids } = await api.post('/run-multiple-ffmpeg-commands', {
      commands: [
        { input_files: { in_a: clipUrl }, output_files: { out_a: 'a.mp3' }, ffmpeg_command: 'ffmpeg -i {{in_a}} -vn -c:a libmp3lame {{out_a}}' },
        { input_files: { in_b: clipUrl }, output_files: { out_b: 'b.jpg' }, ffmpeg_command: 'ffmpeg -i {{in_b}} -frames:v 1 {{out_b}}' },
        { input_files: { in_c: clipUrl }, output_files: { out_c: 'c.mkv' }, ffmpeg_command: 'ffmpeg -i {{in_c}} -c copy {{out_c}}' },
      ],
    })
    t.equal(command_ids.length, 3)
    const [a, b, c] = await Promise.all(command_ids.map((id: string) => api.waitForCommand(id)))
    t.match(a, { status: 'SUCCESS', command_type: 'MULTIPLE_COMMAND', output_files: { out_a: { file_type: 'audio', codec: 'mp3', mime_type: 'audio/mpeg', width: null } } })
    t.match(b, { status: 'SUCCESS', output_files: { out_b: { file_type: 'image', width: 640, height: 360, mime_type: 'image/jpeg' } } })
    t.match(c, { status: 'SUCCESS', output_files: { out_c: { file_format: 'matroska', codec: 'h264', width: 640 } } })
    t.match(await downloadAndProbe(a.output_files.out_a.storage_url, dir, 'a.mp3'), { codec: 'mp3' })
    t.match(await downloadAndProbe(c.output_files.out_c.storage_url, dir, 'c.mkv'), { codec: 'h264', width: 640 })
  })

  t.test('ytdlp-download: a URL is downloaded to out_<suffix>', async (t) => {
    const { command_id } = await api.post('/ytdlp-download', { input_urls: { in_talk: clipUrl }, format_selector: '720p' })
    const done = await api.waitForCommand(command_id)
    t.equal(done.status, 'SUCCESS', JSON.stringify(done))
    t.match(done.output_files.out_talk, { filename: 'talk.mp4', width: 640, height: 360, file_type: 'video' })
    t.equal(done.ffmpeg_command_run_seconds, null)
    t.notOk('failed_files' in done)
    t.match(await downloadAndProbe(done.output_files.out_talk.storage_url, dir, 'talk.mp4'), { width: 640, codec: 'h264' })
  })

  t.test('run-ytdlp-command: downloads then runs the ffmpeg arguments', async (t) => {
    const { command_id } = await api.post('/run-ytdlp-command', {
      input_urls: { in_talk: clipUrl },
      ffmpeg_command: '-i {{in_talk}} -vn -c:a libmp3lame {{out_audio}}',
      output_files: { out_audio: 'talk.mp3' },
    })
    const done = await api.waitForCommand(command_id)
    t.equal(done.status, 'SUCCESS', JSON.stringify(done))
    t.match(done.output_files.out_audio, { filename: 'talk.mp3', file_type: 'audio', codec: 'mp3' })
    t.ok(done.ffmpeg_command_run_seconds > 0)
    t.match(await downloadAndProbe(done.output_files.out_audio.storage_url, dir, 'talk-audio.mp3'), { codec: 'mp3' })
  })

  t.test('yt-dlp partial failure: download-only keeps what arrived, with failed_files', async (t) => {
    const missing = media.url('gone.mp4')
    const { command_id } = await api.post('/ytdlp-download', { input_urls: { in_good: clipUrl, in_bad: missing } })
    const done = await api.waitForCommand(command_id)
    t.equal(done.status, 'SUCCESS', JSON.stringify(done))
    t.same(Object.keys(done.output_files), ['out_good'])
    t.match(done.failed_files, { in_bad: { url: missing, error_status: /^(SOURCE_UNAVAILABLE|DOWNLOAD_FAILED)$/ } })
  })

  t.test('yt-dlp with ffmpeg is all or nothing: one failed download fails the command', async (t) => {
    const missing = media.url('gone.mp4')
    const { command_id } = await api.post('/run-ytdlp-command', {
      input_urls: { in_good: clipUrl, in_bad: missing },
      ffmpeg_command: '-i {{in_good}} -i {{in_bad}} -map 0 -map 1 -c copy {{out_both}}',
      output_files: { out_both: 'both.mkv' },
    })
    const done = await api.waitForCommand(command_id)
    t.equal(done.status, 'FAILED', JSON.stringify(done))
    t.match(done.error_status, /^(SOURCE_UNAVAILABLE|DOWNLOAD_FAILED)$/)
    t.match(done.error_message, /ffmpeg did not run/)
    t.notOk('output_files' in done)
    t.equal(done.ffmpeg_command_run_seconds, null)
  })

  t.test('drawtext without a fontfile draws with the font fontconfig finds, on a PNG thumbnail', async (t) => {
    const { command_id } = await api.post('/run-ffmpeg-command', {
      input_files: { in_video: clipUrl },
      output_files: { out_plain: 'plain.png', out_text: 'text.png' },
      ffmpeg_command: 'ffmpeg -ss 0.5 -i {{in_video}} -frames:v 1 {{out_plain}} -frames:v 1 -vf drawtext=text=ffkube:fontsize=64:fontcolor=white:x=20:y=20 {{out_text}}',
    })
    const done = await api.waitForCommand(command_id)
    t.equal(done.status, 'SUCCESS', JSON.stringify(done))
    t.match(done.output_files.out_text, { filename: 'text.png', width: 640, height: 360, codec: 'png', mime_type: 'image/png' })
    const plain = await downloadAndProbe(done.output_files.out_plain.storage_url, dir, `${command_id}-plain.png`)
    const text = await downloadAndProbe(done.output_files.out_text.storage_url, dir, `${command_id}-text.png`)
    t.match(text, { codec: 'png', width: 640, height: 360 })
    t.not(text.sha256, plain.sha256, 'the frame with text is not the frame without')
  })

  t.test('a broken ffmpeg argument ends FAILED with error fields', async (t) => {
    const { command_id } = await api.post('/run-ffmpeg-command', {
      input_files: { in_video: clipUrl },
      output_files: { out_x: 'x.mp4' },
      ffmpeg_command: 'ffmpeg -i {{in_video}} -c:v no_such_codec {{out_x}}',
    })
    const done = await api.waitForCommand(command_id)
    t.match(done, { status: 'FAILED', error_status: 'FFMPEG_FAILED', error_message: /\S/ })
    t.ok(done.total_processing_seconds > 0)
    t.notOk('output_files' in done)
  })

  t.test('an input that is not there ends FAILED with INPUT_HTTP_STATUS', async (t) => {
    const { command_id } = await api.post('/run-ffmpeg-command', {
      input_files: { in_video: media.url('gone.mp4') },
      output_files: { out_x: 'x.mp4' },
      ffmpeg_command: 'ffmpeg -i {{in_video}} {{out_x}}',
    })
    const done = await api.waitForCommand(command_id)
    t.match(done, { status: 'FAILED', error_status: 'INPUT_HTTP_STATUS', error_message: /in_video/ })
  })
})
