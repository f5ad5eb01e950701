/**
 * compress_outputs through HTTP in local mode: an HLS alias stored as one
 * zip that unpacks into a playlist ffprobe plays; `true` with a single file
 * and a sequence in one outputs.zip laid out as the bucket would hold them;
 * and the 400s for an alias that is not declared, listed twice, or an
 * out_all declared beside `true`.
 */
import { execFile } from 'node:child_process'
import { mkdir, writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { promisify } from 'node:util'
import t from 'tap'
import { toolPath } from '../../api/local/tools.js'
import { makeClip, serveFiles } from '../harness/media.js'
import { keysUnder } from '../harness/outputs.js'
import { scratchDir } from '../harness/scratch.js'
import { readZip } from '../harness/unzip.js'
import { Client, serviceEnvironment, startService } from './service.js'

const run = promisify(execFile)

t.test('outputs delivered as a zip through HTTP in local mode', async (t) => {
  const dir = await scratchDir(t)
  const environment = await serviceEnvironment(t)
  const [service, clip] = await Promise.all([startService(t, environment), makeClip(join(dir, 'clip.mp4'), { seconds: 3 })])
  const media = await serveFiles(t, [clip])
  const api = new Client(service)
  const client = environment.s3.client()
  t.teardown(() => client.destroy())
  const keysOf = (commandId: string) => keysUnder(client, environment.s3.bucket, `outputs/${commandId}/`)
  const download = async (url: string) => {
    const response = await fetch(url)
    t.equal(response.status, 200, 'the zip downloads')
    return Buffer.from(await response.arrayBuffer())
  }
  const hlsCommand = 'ffmpeg -i {{in_video}} -c:v libx264 -preset ultrafast -g 25 -c:a aac -f hls -hls_time 1 -hls_playlist_type vod -hls_segment_filename seg_%03d.ts {{out_hls}}'

  t.test('an HLS alias listed in compress_outputs is stored as out_hls.zip, whose playlist plays after unzipping', async (t) => {
    const { command_id } = await api.post('/run-ffmpeg-command', {
      input_files: { in_video: media.url(clip) },
      output_files: { out_hls: 'playlist.m3u8', out_thumb: 'thumb.jpg' },
      compress_outputs: ['out_hls'],
      ffmpeg_command: `${hlsCommand} -map 0:v -frames:v 1 {{out_thumb}}`,
    })
    const done = await api.waitForCommand(command_id)
    t.equal(done.status, 'SUCCESS', JSON.stringify(done))
    t.same(done.original_request.compress_outputs, ['out_hls'])
    const zip = done.output_files.out_hls
    t.match(zip, { filename: 'out_hls.zip', mime_type: 'application/zip', file_type: 'other', duration: null, width: null, codec: null, file_count: 1 })
    t.equal(zip.files.length, 1)
    t.match(done.output_files.out_thumb, { filename: 'thumb.jpg', file_type: 'image' }, 'an alias not listed is stored as it is')
    t.same(await keysOf(command_id), [`outputs/${command_id}/out_hls.zip`, `outputs/${command_id}/thumb.jpg`], 'the zip instead of the playlist and segments')
    const data = await download(zip.storage_url)
    t.equal(zip.size_mbytes, Math.round((data.length / 1048576) * 1e6) / 1e6, 'size_mbytes is the zip\'s')
    const entries = await readZip(data)
    t.same(entries.map((entry) => entry.name), ['playlist.m3u8', 'seg_000.ts', 'seg_001.ts', 'seg_002.ts'])
    t.equal(entries.find((entry) => entry.name === 'playlist.m3u8')?.compressionMethod, 8, 'the playlist is deflated')
    t.equal(entries.find((entry) => entry.name === 'seg_000.ts')?.compressionMethod, 0, 'segments are stored')
    const unpacked = join(dir, command_id)
    for (const entry of entries) {
      await mkdir(dirname(join(unpacked, entry.name)), { recursive: true })
      await writeFile(join(unpacked, entry.name), entry.data)
    }
    const { stdout } = await run(toolPath('ffprobe'), ['-v', 'error', '-show_entries', 'format=format_name,duration', '-of', 'json', join(unpacked, 'playlist.m3u8')])
    const format = (JSON.parse(stdout) as { format: { format_name: string; duration: string } }).format
    t.equal(format.format_name, 'hls')
    t.ok(Number(format.duration) > 2.5, `the whole stream plays (${format.duration} s)`)
  })

  t.test('compress_outputs true stores a single file and a sequence in one outputs.zip, reported as out_all', async (t) => {
    const { command_id } = await api.post('/run-chained-ffmpeg-commands', {
      input_files: { in_video: media.url(clip) },
      output_files: { out_audio: 'sound.m4a', out_thumbs: 'thumb_%02d.jpg' },
      compress_outputs: true,
      ffmpeg_commands: ['ffmpeg -i {{in_video}} -vn -c:a aac {{out_audio}}', 'ffmpeg -i {{in_video}} -vf fps=1 {{out_thumbs}}'],
    })
    const done = await api.waitForCommand(command_id)
    t.equal(done.status, 'SUCCESS', JSON.stringify(done))
    t.same(Object.keys(done.output_files), ['out_all'])
    t.match(done.output_files.out_all, { filename: 'outputs.zip', mime_type: 'application/zip', file_type: 'other' })
    t.same(done.original_request.compress_outputs, true)
    t.same(await keysOf(command_id), [`outputs/${command_id}/outputs.zip`])
    const entries = await readZip(await download(done.output_files.out_all.storage_url))
    const names = entries.map((entry) => entry.name)
    const thumbs = names.filter((name) => name.startsWith('thumb_'))
    t.ok(thumbs.length >= 2, `the sequence is there: ${names.join(' ')}`)
    t.same(names, ['sound.m4a', ...thumbs.map((_, i) => `thumb_${String(i + 1).padStart(2, '0')}.jpg`)], 'each file by the name it would have in the bucket, at the zip\'s root')
    t.equal(entries.find((entry) => entry.name === 'sound.m4a')?.data.subarray(4, 8).toString('latin1'), 'ftyp', 'the audio file is whole')
  })

  t.test('compress_outputs naming an undeclared alias, an alias twice, or true beside out_all is 400 naming the field', async (t) => {
    const body = { input_files: { in_video: media.url(clip) }, output_files: { out_video: 'v.mp4' }, ffmpeg_command: 'ffmpeg -i {{in_video}} -c copy {{out_video}}' }
    const cases: Array<[unknown, Record<string, string>, RegExp]> = [
      [['out_other'], body.output_files, /compress_outputs: "out_other" is not an alias of output_files/],
      [['out_video', 'out_video'], body.output_files, /compress_outputs: lists "out_video" twice/],
      [true, { out_all: 'v.mp4' }, /compress_outputs: true reports every output as out_all/],
      [[], body.output_files, /compress_outputs: must list at least one out_\* alias, or be true/],
      [false, body.output_files, /^body\.compress_outputs: must be true \(every output in one zip.*\) or a list of declared out_\* aliases/],
      ['yes', body.output_files, /^body\.compress_outputs: must be true .* or a list of declared out_\* aliases/],
    ]
    for (const [compress, outputs, message] of cases) {
      const command = outputs.out_all ? 'ffmpeg -i {{in_video}} -c copy {{out_all}}' : body.ffmpeg_command
      const answer = await api.request('POST', '/run-ffmpeg-command', { ...body, output_files: outputs, ffmpeg_command: command, compress_outputs: compress })
      t.equal(answer.status, 400, JSON.stringify(compress))
      t.match(answer.body, { error: 'INVALID_REQUEST', message }, JSON.stringify(answer.body))
    }
    const multiple = await api.request('POST', '/run-multiple-ffmpeg-commands', { commands: [{ ...body, compress_outputs: ['out_x'] }] })
    t.equal(multiple.status, 422, 'inside run-multiple-ffmpeg-commands, as every fault of an element')
    t.match(multiple.body, { error: 'VALIDATION_ERROR', message: /commands\[0\]\.compress_outputs: "out_x" is not an alias of output_files/ })
  })
})
