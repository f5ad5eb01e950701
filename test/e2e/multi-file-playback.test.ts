/**
 * Multi-file outputs end to end in local mode (`node dist/api/main.js`, the
 * local executor and its runner): an HLS ladder and a DASH manifest made by
 * real commands, their storage_urls opened over HTTP by a standard player
 * (Debian's /usr/bin/ffprobe) with no credentials, and `ffkube run`
 * downloading every file into its layout so the playlist plays from disk.
 */
import { readdir } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { cliEnvironment, runCli } from '../cli/cli-process.js'
import { makeClip, serveFiles } from '../harness/media.js'
import { play } from '../harness/outputs.js'
import { scratchDir } from '../harness/scratch.js'
import { Client, serviceEnvironment, startService } from './service.js'

const LADDER =
  'ffmpeg -i {{in_video}} -map 0:v -map 0:a -map 0:v -map 0:a -s:v:0 320x180 -s:v:1 160x90 -c:v libx264 -preset ultrafast -g 25 -c:a aac ' +
  '-f hls -hls_time 1 -hls_playlist_type vod -var_stream_map "v:0,a:0 v:1,a:1" -master_pl_name master.m3u8 -hls_segment_filename seg_%v_%03d.ts {{out_hls}}'

t.test('multi-file outputs play over HTTP and download whole, in local mode', async (t) => {
  const dir = await scratchDir(t)
  const environment = await serviceEnvironment(t)
  const [service, clip] = await Promise.all([startService(t, environment), makeClip(join(dir, 'clip.mp4'), { seconds: 3 })])
  const media = await serveFiles(t, [clip])
  const api = new Client(service)

  t.test('an HLS ladder: its storage_url plays the whole stream without credentials, and each file downloads', async (t) => {
    const { command_id } = await api.post('/run-ffmpeg-command', { input_files: { in_video: media.url(clip) }, output_files: { out_hls: 'stream_%v.m3u8' }, ffmpeg_command: LADDER })
    const done = await api.waitForCommand(command_id)
    t.equal(done.status, 'SUCCESS', JSON.stringify(done))
    const out = done.output_files.out_hls
    t.match(out, { filename: 'master.m3u8', is_deleted: false, storage_location: 'INTERNAL' })
    t.equal(out.file_count, out.files.length)
    t.ok(out.file_count >= 9, `the master, two variant playlists and their segments (${out.file_count})`)
    const played = await play(out.storage_url)
    t.ok(played.duration > 2.8 && played.duration < 3.3, `3 s (${played.duration})`)
    t.ok(played.span > 2.8, `every segment read (packets span ${played.span})`)
    for (const file of out.files) {
      // The body is read, not only the status: a download is the bytes. (Node's fetch also trips an
      // internal assertion when a server that closes each connection, as versitygw does, ends one
      // under a body nobody reads.)
      const response = await fetch(file.storage_url)
      const bytes = (await response.arrayBuffer()).byteLength
      t.equal(response.status, 200, `${file.filename} downloads`)
      // size_mbytes is MiB to six decimals: within a byte of the size.
      t.ok(Math.abs(bytes - file.size_mbytes * 1_048_576) <= 1, `${file.filename} downloads whole (${bytes} bytes, ${file.size_mbytes} MiB)`)
    }
    t.match((await api.request('GET', `/files/${out.file_id}`)).body, { file_count: out.file_count })
  })

  t.test('a DASH manifest: its storage_url opens with its whole duration without credentials', async (t) => {
    const { command_id } = await api.post('/run-ffmpeg-command', {
      input_files: { in_video: media.url(clip) },
      output_files: { out_dash: 'manifest.mpd' },
      ffmpeg_command: 'ffmpeg -i {{in_video}} -c:v libx264 -preset ultrafast -g 25 -c:a aac -f dash -seg_duration 1 {{out_dash}}',
    })
    const done = await api.waitForCommand(command_id)
    t.equal(done.status, 'SUCCESS', JSON.stringify(done))
    const out = done.output_files.out_dash
    t.match(out, { filename: 'manifest.mpd', mime_type: 'application/dash+xml' })
    const played = await play(out.storage_url)
    t.ok(played.duration > 2.8 && played.duration < 3.3, `3 s (${played.duration})`)
    t.ok(played.packets > 0, 'its segments are read from their presigned URLs')
  })

  t.test('ffkube run downloads every file of the ladder into its layout, and the master plays from disk', async (t) => {
    const user = await cliEnvironment(join(dir, 'cli'), { FFKUBE_URL: service.baseUrl, FFKUBE_API_KEY: service.apiKey })
    const result = await runCli(user, ['run', '--in', `in_video=${media.url(clip)}`, '--out', 'out_hls=stream_%v.m3u8', LADDER])
    t.equal(result.code, 0, result.stderr)
    const files = (await readdir(user.cwd)).sort()
    t.ok(files.includes('master.m3u8') && files.includes('stream_0.m3u8') && files.includes('seg_1_002.ts'), files.join(' '))
    t.match(result.stdout, /^out_hls {2}\S+master\.m3u8 {2}/m, 'the main file with its media facts')
    t.match(result.stdout, /^out_hls {2}\S+seg_0_000\.ts$/m, 'each other file by its path')
    const local = await play(join(user.cwd, 'master.m3u8'))
    t.ok(local.span > 2.8, `the downloaded ladder plays (packets span ${local.span})`)
  })
})
