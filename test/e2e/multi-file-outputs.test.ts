/**
 * Outputs of many files through HTTP in local mode (`node dist/api/main.js`,
 * the local executor and its runner): an HLS output ends SUCCESS with every
 * file in the bucket under outputs/{command_id}/, and a pattern that would
 * write 100,000 files ends FAILED OUTPUT_TOO_MANY_FILES with nothing stored,
 * the cap coming from the plan's configuration (COMMAND_MAX_OUTPUT_FILES_<PLAN>).
 * The API's own fields for the files (file_count, files) are another part's.
 */
import { join } from 'node:path'
import t from 'tap'
import { makeClip, serveFiles } from '../harness/media.js'
import { keysUnder } from '../harness/outputs.js'
import { scratchDir } from '../harness/scratch.js'
import { Client, serviceEnvironment, startService } from './service.js'

t.test('multi-file outputs through HTTP in local mode', async (t) => {
  const dir = await scratchDir(t)
  const environment = await serviceEnvironment(t, { COMMAND_MAX_OUTPUT_FILES_BUSINESS: '100' })
  const [service, clip] = await Promise.all([startService(t, environment), makeClip(join(dir, 'clip.mp4'), { seconds: 3 })])
  const media = await serveFiles(t, [clip])
  const api = new Client(service)
  const client = environment.s3.client()
  t.teardown(() => client.destroy())
  const keysOf = (commandId: string) => keysUnder(client, environment.s3.bucket, `outputs/${commandId}/`)

  t.test('an HLS output ends SUCCESS with the playlist main and every segment stored', async (t) => {
    const { command_id } = await api.post('/run-ffmpeg-command', {
      input_files: { in_video: media.url(clip) },
      output_files: { out_hls: 'playlist.m3u8' },
      ffmpeg_command: 'ffmpeg -i {{in_video}} -c:v libx264 -preset ultrafast -g 25 -c:a aac -f hls -hls_time 1 -hls_playlist_type vod -hls_segment_filename seg_%03d.ts {{out_hls}}',
    })
    const done = await api.waitForCommand(command_id)
    t.equal(done.status, 'SUCCESS', JSON.stringify(done))
    t.match(done.output_files.out_hls, { filename: 'playlist.m3u8', file_format: 'hls' })
    t.same(await keysOf(command_id), ['playlist.m3u8', 'seg_000.ts', 'seg_001.ts', 'seg_002.ts'].map((name) => `outputs/${command_id}/${name}`))
  })

  t.test('a pattern that would write 100,000 files ends FAILED OUTPUT_TOO_MANY_FILES and leaves the bucket empty', async (t) => {
    const { command_id } = await api.post('/run-ffmpeg-command', {
      input_files: { in_video: media.url(clip) },
      output_files: { out_flood: 'f_%06d.bmp' },
      ffmpeg_command: 'ffmpeg -stream_loop -1 -i {{in_video}} -vf fps=20000,scale=8:8 -frames:v 100000 {{out_flood}}',
    })
    const done = await api.waitForCommand(command_id)
    t.match(done, { status: 'FAILED', error_status: 'OUTPUT_TOO_MANY_FILES', error_message: /more than 100 files/ })
    t.same(await keysOf(command_id), [], 'nothing in the bucket')
  })
})
