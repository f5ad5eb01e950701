/**
 * input_compressed_folder in the runner, both ways it runs: every phase in
 * one process (local mode), and each phase as its own run sharing only the
 * work dir (the Job's containers: the fetch container unpacks the zip).
 */
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import type { CommandSpec } from '../../contracts/command-spec.js'
import { makeClip, serveFiles } from '../harness/media.js'
import { startS3 } from '../harness/s3.js'
import { scratchDir } from '../harness/scratch.js'
import { buildZip, type ZipEntrySpec } from '../harness/zip-writer.js'
import { runPhaseAsContainer as phase, runRunner, specOf } from './harness.js'

t.test('a zip folder in the runner', async (t) => {
  const dir = await scratchDir(t, 'ffkube-folders-')
  const clip = await makeClip(join(dir, 'clip.mp4'), { seconds: 1 })
  const clipBytes = await readFile(clip)
  const zips: Record<string, ZipEntrySpec[]> = {
    'assets.zip': [
      { name: 'subs/' },
      { name: 'subs/a.srt', data: '1\n00:00:00,000 --> 00:00:01,000\nhello\n' },
      { name: 'clips/a.mp4', data: clipBytes },
      { name: 'list.txt', data: "ffconcat version 1.0\nfile 'clips/a.mp4'\nfile 'clips/a.mp4'\n" },
    ],
    'symlink.zip': [{ name: 'ok.txt', data: 'x' }, { name: 'passwd', data: '/etc/passwd', mode: 0o120777 }],
    'slip.zip': [{ name: '../../escaped.txt', data: 'x' }],
    'playlist.zip': [{ name: 'hls/index.m3u8', data: '#EXTM3U\n#EXTINF:1,\nseg0.ts\n#EXTINF:1,\n/etc/passwd\n' }],
    'concat.zip': [{ name: 'list.txt', data: "ffconcat version 1.0\nfile 'a.mp4'\nfile 'concat:a.mp4|/etc/passwd'\n" }],
    'bomb.zip': [{ name: 'zeros.bin', data: Buffer.alloc(8 * 1024 * 1024) }],
    'big.zip': [{ name: 'noise.bin', data: Buffer.from(Array.from({ length: 6 * 1024 * 1024 }, (_, i) => (i * 2654435761) >>> 24)), method: 'stored' }],
  }
  const files = [clip]
  for (const [name, entries] of Object.entries(zips)) {
    await writeFile(join(dir, name), buildZip(entries))
    files.push(join(dir, name))
  }
  await writeFile(join(dir, 'not-a-zip.zip'), '<html>a login page</html>')
  files.push(join(dir, 'not-a-zip.zip'))
  const server = await serveFiles(t, files)
  const folderUrl = (name: string) => server.url(join(dir, name))
  const thumbnail = (folder: string, partial: Partial<CommandSpec> = {}): CommandSpec =>
    specOf({
      inputFiles: { in_video: server.url(clip) },
      inputCompressedFolder: folderUrl(folder),
      outputFiles: { out_thumb: 'thumb.jpg' },
      ffmpegCommands: ['ffmpeg -i {{in_video}} -frames:v 1 {{out_thumb}}'],
      ...partial,
    })
  let n = 0
  const workDir = () => join(dir, `work-${n++}`)

  t.test('the fetch container unpacks the folder beside the inputs, removes the zip, and the run container reads its files', async (t) => {
    const spec = thumbnail('assets.zip', { ffmpegCommands: ['ffmpeg -f concat -i list.txt -i {{in_video}} -map 0:v -frames:v 1 {{out_thumb}}'] })
    const work = workDir()
    await mkdir(work)
    const fetch = await phase('fetch', spec, work)
    t.equal(fetch.exitCode, 0, JSON.stringify(fetch.events.at(-1)))
    t.equal(await readFile(join(work, 'subs', 'a.srt'), 'utf8'), '1\n00:00:00,000 --> 00:00:01,000\nhello\n')
    t.same(await readFile(join(work, 'clips', 'a.mp4')), clipBytes)
    t.ok((await readFile(join(work, 'inputs', 'in_video.mp4'))).length > 0, 'the input beside it')
    t.notOk((await readdir(join(work, '.ffkube'))).some((name) => name.endsWith('.zip')), 'the zip is gone once unpacked')
    const run = await phase('run', spec, work)
    t.equal(run.exitCode, 0, JSON.stringify(run.events.at(-1)))
    t.ok((await readFile(join(work, 'outputs', 'thumb.jpg'))).length > 0, 'ffmpeg read the concat list and its clips')
  })

  t.test('in one process, a command of the folder alone runs to SUCCESS', async (t) => {
    const s3 = await startS3(t)
    const spec = thumbnail('assets.zip', { inputFiles: {}, ffmpegCommands: ['ffmpeg -f concat -i list.txt -frames:v 1 {{out_thumb}}'] })
    const run = await runRunner(dir, spec, s3, { ALLOW_PRIVATE_NETWORKS: '1' })
    t.match(run.terminal, { type: 'SUCCESS', output_files: { out_thumb: { filename: 'thumb.jpg', width: 320, height: 240 } } })
  })

  const failures: Array<[string, string, string, RegExp]> = [
    ['a symlink entry', 'symlink.zip', 'FOLDER_UNSAFE_ENTRY', /^input_compressed_folder: entry "passwd" is a symbolic link/],
    ['a zip-slip entry', 'slip.zip', 'FOLDER_UNSAFE_ENTRY', /^input_compressed_folder: entry "\.\.\/\.\.\/escaped\.txt" has a "\.\." segment/],
    ['an HLS playlist naming a host file', 'playlist.zip', 'FOLDER_UNSAFE_PLAYLIST', /^input_compressed_folder: file "hls\/index\.m3u8" line 5: entry "\/etc\/passwd" is an absolute path/],
    ['a concat list naming a protocol', 'concat.zip', 'FOLDER_UNSAFE_PLAYLIST', /^input_compressed_folder: file "list\.txt" line 3: entry "concat:a\.mp4\|\/etc\/passwd" names a protocol/],
    ['a bomb over the plan cap', 'bomb.zip', 'FOLDER_TOO_LARGE', /^input_compressed_folder: entry "zeros\.bin" (expands|takes the folder past)/],
    ['a file that is not a zip', 'not-a-zip.zip', 'FOLDER_INVALID', /^input_compressed_folder: not a readable zip/],
    ['a zip larger than any within the caps', 'big.zip', 'INPUT_TOO_LARGE', /^input_compressed_folder: /],
  ]
  for (const [what, zip, status, message] of failures) {
    t.test(`${what} ends FAILED ${status} in the fetch container, and no later phase runs on it`, async (t) => {
      const spec = thumbnail(zip, { limits: { maxRunSeconds: 60, vcpuMillis: 1000, memoryMib: 1024, folder: { maxBytes: 4 * 1024 * 1024, maxEntries: 10, maxRatio: 50 } } })
      const work = workDir()
      await mkdir(work)
      const fetch = await phase('fetch', spec, work)
      t.equal(fetch.exitCode, 1)
      t.match(fetch.events.at(-1), { type: 'FAILED', error_status: status, error_message: message })
      t.notOk((await readdir(dir)).includes('escaped.txt'), 'nothing written outside the work dir')
      const run = await phase('run', spec, work)
      t.match(run.events.at(-1), { type: 'FAILED', error_status: 'INTERNAL_ERROR' }, 'the run container refuses to start without the fetch record')
    })
  }

  t.test('in one process, a hostile folder ends FAILED before ffmpeg runs and nothing is uploaded', async (t) => {
    const s3 = await startS3(t)
    const run = await runRunner(dir, thumbnail('playlist.zip'), s3, { ALLOW_PRIVATE_NETWORKS: '1' })
    t.equal(run.exitCode, 1)
    t.match(run.terminal, { type: 'FAILED', error_status: 'FOLDER_UNSAFE_PLAYLIST', error_message: /\/etc\/passwd/ })
    t.notOk(run.events.some((e) => e.type === 'PROCESSING' && e.stage === 'RUNNING'), 'ffmpeg never started')
  })

  t.test('a folder on a private address is refused by the URL guard unless private networks are allowed', async (t) => {
    const s3 = await startS3(t)
    const run = await runRunner(dir, thumbnail('assets.zip', { inputFiles: {}, ffmpegCommands: ['ffmpeg -f concat -i list.txt -frames:v 1 {{out_thumb}}'] }), s3)
    t.match(run.terminal, { type: 'FAILED', error_status: 'INPUT_FORBIDDEN_ADDRESS', error_message: /^input_compressed_folder: / })
  })
})
