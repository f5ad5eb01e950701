/**
 * DASH manifests as inputs in the runner, with the real ffmpeg: a folder our
 * own ffmpeg wrote with `-f dash`, zipped, read back by a command (one
 * process, and phase by phase as a Job runs it); hostile manifests in a
 * folder (the fetch phase's check) and fetched as an input (the run phase's
 * check, which no folder check has seen); and segments that are lists in
 * disguise, which ffmpeg itself refuses under DASH_HARDENING.
 */
import { execFile } from 'node:child_process'
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { promisify } from 'node:util'
import t from 'tap'
import { toolPath } from '../../api/local/tools.js'
import type { CommandSpec } from '../../contracts/command-spec.js'
import { probeDuration, serveFiles } from '../harness/media.js'
import { startS3 } from '../harness/s3.js'
import { scratchDir } from '../harness/scratch.js'
import { buildZip, type ZipEntrySpec } from '../harness/zip-writer.js'
import { runPhaseAsContainer as phase, runRunner, specOf, storageEnv } from './harness.js'

const run = promisify(execFile)

t.test('DASH manifests in the runner', async (t) => {
  const dir = await scratchDir(t, 'ffkube-dash-')
  const made = join(dir, 'made')
  await mkdir(made)
  // Two one-second segments of video, named by the muxer's defaults (init-stream0.m4s, chunk-stream0-0000N.m4s).
  await run(toolPath('ffmpeg'), ['-loglevel', 'error', '-f', 'lavfi', '-i', 'testsrc2=size=320x240:rate=10:duration=2',
    '-c:v', 'libx264', '-preset', 'ultrafast', '-g', '10', '-f', 'dash', '-seg_duration', '1', join(made, 'manifest.mpd')])
  const segments = (await readdir(made)).filter((name) => name.endsWith('.m4s')).sort()
  t.ok(segments.length >= 3, `the muxer wrote an init section and segments: ${segments.join(' ')}`)
  const manifest = await readFile(join(made, 'manifest.mpd'), 'utf8')
  const segmentEntries: ZipEntrySpec[] = await Promise.all(segments.map(async (name) => ({ name: `dash/${name}`, data: await readFile(join(made, name)) })))
  const withBaseUrl = (baseUrl: string) => manifest.replace(/(<Period\b)/, `<BaseURL>${baseUrl}</BaseURL>\n\t$1`)
  // The init section is what the segment demuxer is probed on (dashdec.c reopen_demux_for_component);
  // media segments after it are fed to that demuxer as bytes, never probed.
  const init = segments.find((name) => name.startsWith('init-'))!
  const chunk = segments.find((name) => name.startsWith('chunk-'))!
  /** The folder with the init section's bytes replaced. */
  const disguised = (bytes: string): ZipEntrySpec[] => [
    { name: 'dash/manifest.mpd', data: manifest },
    ...segmentEntries.map((entry) => (entry.name === `dash/${init}` ? { name: entry.name, data: bytes } : entry)),
  ]
  const hostileManifests: Record<string, string> = {
    'passwd.mpd': withBaseUrl('file:///etc/passwd'),
    'up.mpd': withBaseUrl('../'),
    'absolute.mpd': withBaseUrl('/etc/'),
    'http.mpd': withBaseUrl('http://169.254.169.254/latest/'),
    'cdata.mpd': withBaseUrl('<![CDATA[/etc/]]>'),
  }
  const zips: Record<string, ZipEntrySpec[]> = {
    'dash.zip': [{ name: 'dash/manifest.mpd', data: manifest }, ...segmentEntries],
    ...Object.fromEntries(Object.entries(hostileManifests).map(([name, text]) => [`${name}.zip`, [{ name: 'dash/manifest.mpd', data: text }, ...segmentEntries]])),
    'hls-segment.zip': disguised(`#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXTINF:1,\n${chunk}\n#EXT-X-ENDLIST\n`),
    'concat-segment.zip': disguised(`ffconcat version 1.0\nfile ${chunk}\n`),
  }
  const files: string[] = []
  for (const [name, entries] of Object.entries(zips)) {
    await writeFile(join(dir, name), buildZip(entries))
    files.push(join(dir, name))
  }
  for (const [name, text] of Object.entries(hostileManifests)) {
    await writeFile(join(dir, name), text)
    files.push(join(dir, name))
  }
  const server = await serveFiles(t, files)
  const fromFolder = (zip: string): CommandSpec =>
    specOf({
      inputCompressedFolder: server.url(join(dir, zip)),
      outputFiles: { out_video: 'out.mp4' },
      ffmpegCommands: ['ffmpeg -i dash/manifest.mpd -c copy {{out_video}}'],
    })
  const s3 = await startS3(t)
  const env = { ALLOW_PRIVATE_NETWORKS: '1' }

  t.test('in one process, a command reads the manifest of a zip folder and its segments to SUCCESS', async (t) => {
    const result = await runRunner(dir, fromFolder('dash.zip'), s3, env)
    t.match(result.terminal, { type: 'SUCCESS', output_files: { out_video: { filename: 'out.mp4', width: 320, height: 240 } } })
  })

  t.test('phase by phase, the run container reads the manifest the fetch container unpacked', async (t) => {
    const spec = fromFolder('dash.zip')
    const work = join(dir, `phases-${spec.commandId}`)
    await mkdir(work)
    t.equal((await phase('fetch', spec, work, storageEnv(s3))).exitCode, 0)
    const ran = await phase('run', spec, work, storageEnv(s3))
    t.equal(ran.exitCode, 0, JSON.stringify(ran.events.at(-1)))
    const duration = await probeDuration(join(work, 'outputs', 'out.mp4'))
    t.ok(duration > 1.5 && duration < 2.5, `both segments read: ${duration} s`)
  })

  // [what, file, the entry or reason the message names]
  const hostile: Array<[string, string, RegExp]> = [
    ['a BaseURL at file:///etc/passwd', 'passwd.mpd', /"file:\/\/\/etc\/passwd"/],
    ['a BaseURL climbing out with ../', 'up.mpd', /"\.\.\/"/],
    ['an absolute BaseURL', 'absolute.mpd', /"\/etc\/"/],
    ['an http BaseURL', 'http.mpd', /"http:\/\/169\.254\.169\.254\/latest\/"/],
    ['a BaseURL in a CDATA section', 'cdata.mpd', /CDATA section/],
  ]
  for (const [what, file, named] of hostile) {
    t.test(`a folder manifest with ${what} ends FAILED FOLDER_UNSAFE_PLAYLIST before ffmpeg runs`, async (t) => {
      const result = await runRunner(dir, fromFolder(`${file}.zip`), s3, env)
      t.match(result.terminal, { type: 'FAILED', error_status: 'FOLDER_UNSAFE_PLAYLIST', error_message: named })
      t.notOk(result.events.some((e) => e.type === 'PROCESSING' && e.stage === 'RUNNING'), 'ffmpeg never started')
    })
    t.test(`a fetched manifest with ${what} ends FAILED INVALID_COMMAND in the run phase before ffmpeg runs`, async (t) => {
      const spec = specOf({
        inputFiles: { in_mpd: server.url(join(dir, file)) },
        outputFiles: { out_video: 'out.mp4' },
        ffmpegCommands: ['ffmpeg -i {{in_mpd}} -c copy {{out_video}}'],
      })
      const result = await runRunner(dir, spec, s3, env)
      t.match(result.terminal, { type: 'FAILED', error_status: 'INVALID_COMMAND', error_message: named })
      t.match(result.terminal, { error_message: /^-i \{\{in_mpd\}\}: inputs\/in_mpd\.mpd: line \d+: / })
      t.notMatch(result.raw, /==> ffmpeg/, 'ffmpeg never started (no log of it)')
    })
  }

  // [what, zip, ffmpeg's words: 8.1's HLS probe refuses a playlist not named .m3u8 before the whitelist does]
  const disguises: Array<[string, string, RegExp]> = [
    ['an HLS playlist', 'hls-segment.zip', /not on whitelist|Not detecting m3u8\/hls with non standard extension/],
    ['a concat list', 'concat-segment.zip', /not on whitelist/],
  ]
  for (const [what, zip, said] of disguises) {
    t.test(`an init section that is ${what} in disguise is not opened as one: FAILED FFMPEG_FAILED`, async (t) => {
      const result = await runRunner(dir, fromFolder(zip), s3, env)
      t.match(result.terminal, { type: 'FAILED', error_status: 'FFMPEG_FAILED' })
      t.match(result.raw, said, "ffmpeg's own words, in the command's log")
    })
  }
})
