/**
 * input_compressed_folder through the HTTP API, with the service as `npm
 * start` runs it (local executor): zips crafted in the test, served over
 * HTTP or uploaded, unpacked into the work dir before the first command.
 */
import { execFile } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { promisify } from 'node:util'
import t from 'tap'
import { toolPath } from '../../api/local/tools.js'
import { makeClip, serveFiles } from '../harness/media.js'
import { scratchDir } from '../harness/scratch.js'
import { buildZip, type ZipEntrySpec } from '../harness/zip-writer.js'
import { Client, serviceEnvironment, startService } from './service.js'

const run = promisify(execFile)
const FONT = '/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf'

/** PNG frames of a test pattern, as [name, bytes]. */
async function frames(dir: string, count: number): Promise<Array<[string, Buffer]>> {
  await run(toolPath('ffmpeg'), ['-hide_banner', '-loglevel', 'error', '-y', '-f', 'lavfi', '-i', 'testsrc=size=160x120:rate=10', '-frames:v', String(count), join(dir, 'img_%03d.png')])
  const names = (await readdir(dir)).filter((name) => /^img_\d{3}\.png$/.test(name)).sort()
  return Promise.all(names.map(async (name) => [name, await readFile(join(dir, name))] as [string, Buffer]))
}

/** A DASH folder our ffmpeg writes (`-f dash`, two one-second segments), as zip entries under dash/. */
async function dashFolder(dir: string): Promise<ZipEntrySpec[]> {
  const made = join(dir, 'dash')
  await mkdir(made)
  await run(toolPath('ffmpeg'), ['-hide_banner', '-loglevel', 'error', '-f', 'lavfi', '-i', 'testsrc2=size=320x240:rate=10:duration=2',
    '-c:v', 'libx264', '-preset', 'ultrafast', '-g', '10', '-f', 'dash', '-seg_duration', '1', join(made, 'manifest.mpd')])
  const names = (await readdir(made)).sort()
  return Promise.all(names.map(async (name) => ({ name: `dash/${name}`, data: await readFile(join(made, name)) })))
}

t.test('zip folders in, through the API', async (t) => {
  const dir = await scratchDir(t)
  const environment = await serviceEnvironment(t)
  const [service, clipA, clipB] = await Promise.all([
    startService(t, environment),
    makeClip(join(dir, 'a.mp4'), { seconds: 1, width: 320, height: 240 }),
    makeClip(join(dir, 'b.mp4'), { seconds: 1, width: 320, height: 240 }),
  ])
  const api = new Client(service)
  const [bytesA, bytesB, dash] = await Promise.all([readFile(clipA), readFile(clipB), dashFolder(dir)])
  const manifest = String(dash.find((entry) => entry.name === 'dash/manifest.mpd')!.data)
  const zips: Record<string, ZipEntrySpec[]> = {
    'frames.zip': (await frames(dir, 10)).map(([name, data]) => ({ name: `frames/${name}`, data, method: 'stored' as const })),
    'concat.zip': [{ name: 'clips/a.mp4', data: bytesA }, { name: 'clips/b.mp4', data: bytesB }, { name: 'list.txt', data: "file 'clips/a.mp4'\nfile 'clips/b.mp4'\n" }],
    'subs.zip': [
      { name: 'subs.srt', data: '1\n00:00:00,000 --> 00:00:01,000\nHello from the folder\n' },
      ...(existsSync(FONT) ? [{ name: 'fonts/DejaVuSans.ttf', data: await readFile(FONT) }] : []),
    ],
    'hostile-hls.zip': [{ name: 'clips/a.mp4', data: bytesA }, { name: 'index.m3u8', data: '#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXTINF:1,\nclips/a.mp4\n#EXTINF:1,\n/etc/passwd\n#EXT-X-ENDLIST\n' }],
    'dash.zip': dash,
    'hostile-dash.zip': [...dash.filter((entry) => entry.name !== 'dash/manifest.mpd'), { name: 'dash/manifest.mpd', data: manifest.replace('<Period', '<BaseURL>file:///etc/</BaseURL><Period') }],
    'hostile-parent.zip': [{ name: 'clips/a.mp4', data: bytesA }, { name: 'list.txt', data: "file 'clips/a.mp4'\nfile '../../../../etc/passwd'\n" }],
    'hostile-file-protocol.zip': [{ name: 'clips/a.mp4', data: bytesA }, { name: 'list.txt', data: "file 'file:/etc/passwd'\n" }],
    'hostile-concat-protocol.zip': [{ name: 'clips/a.mp4', data: bytesA }, { name: 'list.txt', data: "file 'concat:clips/a.mp4|/etc/passwd'\n" }],
    'hostile-disguised.zip': [{ name: 'clips/a.mp4', data: '#EXTM3U\n#EXTINF:1,\nfile:///etc/passwd\n' }],
    'hostile-symlink.zip': [{ name: 'clips/a.mp4', data: '/etc/passwd', mode: 0o120777 }],
    'hostile-slip.zip': [{ name: '../../../../tmp/ffkube-slip.txt', data: 'x' }, { name: 'clips/a.mp4', data: bytesA }],
  }
  for (const [name, entries] of Object.entries(zips)) await writeFile(join(dir, name), buildZip(entries))
  const media = await serveFiles(t, [clipA, ...Object.keys(zips).map((name) => join(dir, name))])
  const zipUrl = (name: string) => media.url(join(dir, name))

  t.test('an image sequence from a zip becomes a video, with no input_files at all', async (t) => {
    const { command_id } = await api.post('/run-ffmpeg-command', {
      input_compressed_folder: zipUrl('frames.zip'),
      output_files: { out_video: 'frames.mp4' },
      ffmpeg_command: 'ffmpeg -framerate 10 -i frames/img_%03d.png -c:v libx264 -pix_fmt yuv420p {{out_video}}',
    })
    const done = await api.waitForCommand(command_id)
    t.match(done, { status: 'SUCCESS', output_files: { out_video: { filename: 'frames.mp4', width: 160, height: 120 } } }, JSON.stringify(done))
    t.ok(Math.abs(done.output_files.out_video.duration - 1) < 0.2, `ten frames at 10 fps last a second, got ${done.output_files.out_video.duration}`)
    t.same(done.original_request, { input_files: {}, input_compressed_folder: zipUrl('frames.zip'), output_files: { out_video: 'frames.mp4' }, ffmpeg_command: 'ffmpeg -framerate 10 -i frames/img_%03d.png -c:v libx264 -pix_fmt yuv420p {{out_video}}' })
  })

  t.test('a concat list with its clips joins them', async (t) => {
    const { command_id } = await api.post('/run-chained-ffmpeg-commands', {
      input_compressed_folder: zipUrl('concat.zip'),
      output_files: { out_joined: 'joined.mp4' },
      ffmpeg_commands: ['ffmpeg -f concat -i list.txt -c copy {{out_joined}}'],
    })
    const done = await api.waitForCommand(command_id)
    t.equal(done.status, 'SUCCESS', JSON.stringify(done))
    t.ok(done.output_files.out_joined.duration > 1.8, `two one-second clips, got ${done.output_files.out_joined.duration}`)
  })

  t.test('a DASH manifest our ffmpeg wrote, read back with its segments', async (t) => {
    const { command_id } = await api.post('/run-ffmpeg-command', {
      input_compressed_folder: zipUrl('dash.zip'),
      output_files: { out_video: 'from-dash.mp4' },
      ffmpeg_command: 'ffmpeg -i dash/manifest.mpd -c copy {{out_video}}',
    })
    const done = await api.waitForCommand(command_id)
    t.match(done, { status: 'SUCCESS', output_files: { out_video: { filename: 'from-dash.mp4', width: 320, height: 240 } } }, JSON.stringify(done))
    t.ok(done.output_files.out_video.duration > 1.5, `both one-second segments, got ${done.output_files.out_video.duration}`)
  })

  t.test('subtitles with their font, the folder beside input_files', async (t) => {
    const fontsdir = existsSync(FONT) ? ':fontsdir=fonts' : ''
    const { command_id } = await api.post('/run-ffmpeg-command', {
      input_files: { in_video: media.url(clipA) },
      input_compressed_folder: zipUrl('subs.zip'),
      output_files: { out_video: 'subtitled.mp4' },
      ffmpeg_command: `ffmpeg -i {{in_video}} -vf subtitles=subs.srt${fontsdir} -c:a copy {{out_video}}`,
    })
    const done = await api.waitForCommand(command_id)
    t.match(done, { status: 'SUCCESS', output_files: { out_video: { width: 320, height: 240 } } }, JSON.stringify(done))
  })

  t.test('each command of a multiple request brings its own folder', async (t) => {
    const { command_ids } = await api.post('/run-multiple-ffmpeg-commands', {
      commands: [
        { input_compressed_folder: zipUrl('concat.zip'), output_files: { out_a: 'a.mp4' }, ffmpeg_command: 'ffmpeg -i clips/a.mp4 -c copy {{out_a}}' },
        { input_files: { in_video: media.url(clipA) }, output_files: { out_b: 'b.mp4' }, ffmpeg_command: 'ffmpeg -i {{in_video}} -c copy {{out_b}}' },
      ],
    })
    const [first, second] = await Promise.all(command_ids.map((id: string) => api.waitForCommand(id)))
    t.equal(first.status, 'SUCCESS', JSON.stringify(first))
    t.equal(first.original_request.input_compressed_folder, zipUrl('concat.zip'))
    t.equal(second.status, 'SUCCESS')
    t.notOk('input_compressed_folder' in second.original_request, 'no folder, none recorded')
  })

  const hostile: Array<[string, string, string, string, RegExp]> = [
    ['an HLS playlist naming /etc/passwd', 'hostile-hls.zip', 'ffmpeg -i index.m3u8 -c copy {{out_x}}', 'FOLDER_UNSAFE_PLAYLIST', /file "index\.m3u8" line 6: entry "\/etc\/passwd" is an absolute path/],
    ['a DASH BaseURL at file:///etc/', 'hostile-dash.zip', 'ffmpeg -i dash/manifest.mpd -c copy {{out_x}}', 'FOLDER_UNSAFE_PLAYLIST', /file "dash\/manifest\.mpd" line \d+: entry "file:\/\/\/etc\/" names a protocol/],
    ['a concat entry climbing out with ../', 'hostile-parent.zip', 'ffmpeg -f concat -i list.txt -c copy {{out_x}}', 'FOLDER_UNSAFE_PLAYLIST', /entry "\.\.\/\.\.\/\.\.\/\.\.\/etc\/passwd" leaves the folder/],
    ['a concat entry with the file: protocol', 'hostile-file-protocol.zip', 'ffmpeg -f concat -i list.txt -c copy {{out_x}}', 'FOLDER_UNSAFE_PLAYLIST', /entry "file:\/etc\/passwd" names a protocol/],
    ['a concat entry with the concat: protocol', 'hostile-concat-protocol.zip', 'ffmpeg -f concat -i list.txt -c copy {{out_x}}', 'FOLDER_UNSAFE_PLAYLIST', /entry "concat:clips\/a\.mp4\|\/etc\/passwd" names a protocol/],
    ['a playlist disguised as an .mp4', 'hostile-disguised.zip', 'ffmpeg -i clips/a.mp4 -c copy {{out_x}}', 'FOLDER_UNSAFE_PLAYLIST', /file "clips\/a\.mp4" line 3: entry "file:\/\/\/etc\/passwd"/],
    ['a symlink entry', 'hostile-symlink.zip', 'ffmpeg -i clips/a.mp4 -c copy {{out_x}}', 'FOLDER_UNSAFE_ENTRY', /entry "clips\/a\.mp4" is a symbolic link/],
    ['a zip-slip entry', 'hostile-slip.zip', 'ffmpeg -i clips/a.mp4 -c copy {{out_x}}', 'FOLDER_UNSAFE_ENTRY', /"\.\." segment/],
  ]
  for (const [what, zip, command, status, message] of hostile) {
    t.test(`${what} ends FAILED ${status}, with no output and nothing written outside`, async (t) => {
      const { command_id } = await api.post('/run-ffmpeg-command', { input_compressed_folder: zipUrl(zip), output_files: { out_x: 'x.mp4' }, ffmpeg_command: command })
      const done = await api.waitForCommand(command_id)
      t.match(done, { status: 'FAILED', error_status: status, error_message: message })
      t.notOk('output_files' in done, 'no output, so nothing of the host in one')
      t.notOk(existsSync('/tmp/ffkube-slip.txt'), 'nothing written outside the work dir')
    })
  }

  t.test('a folder that is not a zip ends FAILED FOLDER_INVALID', async (t) => {
    const { command_id } = await api.post('/run-ffmpeg-command', { input_compressed_folder: media.url(clipA), output_files: { out_x: 'x.mp4' }, ffmpeg_command: 'ffmpeg -i clips/a.mp4 -c copy {{out_x}}' })
    t.match(await api.waitForCommand(command_id), { status: 'FAILED', error_status: 'FOLDER_INVALID', error_message: /^input_compressed_folder: not a readable zip/ })
  })

  t.test('submit-time checks name the field', async (t) => {
    const bad = await api.request('POST', '/run-ffmpeg-command', { input_compressed_folder: 'ftp://files.example.com/a.zip', output_files: { out_x: 'x.mp4' }, ffmpeg_command: 'ffmpeg -i a.mp4 {{out_x}}' })
    t.equal(bad.status, 422)
    t.match(bad.body.message, /input_compressed_folder/)
    const neither = await api.request('POST', '/run-ffmpeg-command', { output_files: { out_x: 'x.mp4' }, ffmpeg_command: 'ffmpeg -i a.mp4 {{out_x}}' })
    t.equal(neither.status, 400)
    t.match(neither.body.message, /^input_files is required \(unless input_compressed_folder is given\)/)
    const noFolder = await api.request('POST', '/run-ffmpeg-command', { input_files: { in_v: media.url(clipA) }, output_files: { out_x: 'x.mp4' }, ffmpeg_command: 'ffmpeg -i clips/a.mp4 {{out_x}}' })
    t.equal(noFolder.status, 400, 'a relative path needs a folder')
  })
})

t.test('an uploaded zip is a folder: its storage_url is read from managed storage, with private networks refused', async (t) => {
  const dir = await scratchDir(t)
  const environment = await serviceEnvironment(t, { ALLOW_PRIVATE_NETWORKS: '0' })
  const [service, clip] = await Promise.all([startService(t, environment), makeClip(join(dir, 'a.mp4'), { seconds: 1 })])
  const api = new Client(service)
  const zip = buildZip([{ name: 'clips/a.mp4', data: await readFile(clip) }])
  const form = new FormData()
  form.append('file', new Blob([zip], { type: 'application/zip' }), 'folder.zip')
  const response = await fetch(`${service.baseUrl}/api/v1/files/upload`, { method: 'POST', headers: { 'x-api-key': service.apiKey }, body: form })
  t.equal(response.status, 200)
  const stored = await api.waitForFile(((await response.json()) as { file_id: string }).file_id)
  t.equal(stored.status, 'STORED')
  const { command_id } = await api.post('/run-ffmpeg-command', { input_compressed_folder: stored.storage_url, output_files: { out_x: 'x.mp4' }, ffmpeg_command: 'ffmpeg -i clips/a.mp4 -c copy {{out_x}}' })
  const done = await api.waitForCommand(command_id)
  t.match(done, { status: 'SUCCESS', output_files: { out_x: { filename: 'x.mp4' } } }, JSON.stringify(done))
})
