/**
 * Files named inside filter arguments and lists read by ffmpeg, with the
 * runner split into phases as a Job runs it: the run phase makes the
 * policy's work-dir checks itself, on what the fetch phase left.
 */
import { copyFile, mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import type { CommandSpec } from '../../contracts/command-spec.js'
import { makeClip, probeDuration, serveFiles } from '../harness/media.js'
import { startS3 } from '../harness/s3.js'
import { scratchDir } from '../harness/scratch.js'
import { runPhaseAsContainer as phase, specOf, storageEnv } from './harness.js'

t.test('filter files and lists, with the runner split into phases', async (t) => {
  const dir = await scratchDir(t, 'ffkube-filter-phases-')
  const s3 = await startS3(t)
  const clip = await makeClip(join(dir, 'clip.mp4'), { seconds: 1 })
  const files = {
    srt: join(dir, 'subs.srt'),
    font: join(dir, 'font.ttf'),
    fakeSrt: join(dir, 'fake.srt'),
    list: join(dir, 'list.txt'),
    evilList: join(dir, 'evil.txt'),
    evilPlaylist: join(dir, 'evil.m3u8'),
  }
  await Promise.all([
    writeFile(files.srt, '1\n00:00:00,000 --> 00:00:05,000\nHELLO\n'),
    copyFile('/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf', files.font),
    writeFile(files.fakeSrt, "ffconcat version 1.0\nfile 'in_video.mp4'\n"),
    // Entries are relative to the list, which the fetch phase puts beside the clip in inputs/.
    writeFile(files.list, "ffconcat version 1.0\nfile 'in_video.mp4'\nfile 'in_video.mp4'\n"),
    writeFile(files.evilList, "ffconcat version 1.0\nfile '/etc/passwd'\n"),
    writeFile(files.evilPlaylist, '#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXTINF:1,\n../../../../etc/passwd.ts\n#EXT-X-ENDLIST\n'),
  ])
  const server = await serveFiles(t, [clip, ...Object.values(files)])
  const credentials = join(dir, 'credentials.json')
  await writeFile(credentials, JSON.stringify({ accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey }))
  const workOf = async (spec: CommandSpec) => {
    const work = join(dir, `work-${spec.commandId}`)
    await mkdir(work, { recursive: true })
    return work
  }

  t.test('burns subtitles and draws with a font input across fetch, run and upload', async (t) => {
    const spec = specOf({
      inputFiles: { in_video: server.url(clip), in_srt: server.url(files.srt), in_font: server.url(files.font) },
      outputFiles: { out_video: 'subtitled.mp4' },
      ffmpegCommands: ['ffmpeg -i {{in_video}} -vf subtitles={{in_srt}},drawtext=fontfile={{in_font}}:text=x -c:v libx264 -preset ultrafast -c:a copy {{out_video}}'],
    })
    const work = await workOf(spec)
    t.equal((await phase('fetch', spec, work, storageEnv(s3))).exitCode, 0)
    t.equal((await phase('run', spec, work, storageEnv(s3))).exitCode, 0)
    const upload = await phase('upload', spec, work, { ...storageEnv(s3), S3_CREDENTIALS_FILE: credentials })
    t.equal(upload.exitCode, 0)
    t.match(upload.events.at(-1), { type: 'SUCCESS', output_files: { out_video: { filename: 'subtitled.mp4', width: 320, height: 240 } } })
  })

  t.test('joins the clips a fetched concat list names beside it, with -safe 1', async (t) => {
    const spec = specOf({
      inputFiles: { in_video: server.url(clip), in_list: server.url(files.list) },
      outputFiles: { out_video: 'joined.mp4' },
      ffmpegCommands: ['ffmpeg -f concat -i {{in_list}} -c copy {{out_video}}'],
    })
    const work = await workOf(spec)
    t.equal((await phase('fetch', spec, work, storageEnv(s3))).exitCode, 0)
    t.equal((await phase('run', spec, work, storageEnv(s3))).exitCode, 0)
    const duration = await probeDuration(join(work, 'outputs', 'joined.mp4'))
    t.ok(duration > 1.9 && duration < 2.2, `two one-second clips joined: ${duration} s`)
  })

  // [name, inputs beyond in_video, command, exact error_message]
  const hostile: Array<[string, Record<string, string>, string, string]> = [
    ['a concat list posing as subtitles', { in_srt: files.fakeSrt }, 'ffmpeg -i {{in_video}} -vf subtitles={{in_srt}} {{out_video}}',
      '-vf subtitles filename: inputs/in_srt.srt: it is a concat list, not a subtitle file'],
    ['a concat list naming /etc/passwd', { in_list: files.evilList }, 'ffmpeg -f concat -i {{in_list}} {{out_video}}',
      '-f concat -i {{in_list}}: inputs/in_list.txt: line 2: "/etc/passwd": absolute paths are not allowed'],
    ['an HLS playlist climbing out of the work dir', { in_hls: files.evilPlaylist }, 'ffmpeg -i {{in_hls}} {{out_video}}',
      '-i {{in_hls}}: inputs/in_hls.m3u8: line 4: "../../../../etc/passwd.ts": each part of an entry may use only letters, digits, _ . and -, must not be empty, "..", or start with . or -'],
  ]
  for (const [name, extra, command, message] of hostile) {
    t.test(`a run phase given ${name} reports FAILED INVALID_COMMAND before ffmpeg starts`, async (t) => {
      const spec = specOf({
        inputFiles: { in_video: server.url(clip), ...Object.fromEntries(Object.entries(extra).map(([alias, path]) => [alias, server.url(path)])) },
        outputFiles: { out_video: 'x.mp4' },
        ffmpegCommands: [command],
      })
      const work = await workOf(spec)
      t.equal((await phase('fetch', spec, work, storageEnv(s3))).exitCode, 0)
      const run = await phase('run', spec, work, storageEnv(s3))
      t.equal(run.exitCode, 1)
      t.match(run.events.at(-1), { type: 'FAILED', error_status: 'INVALID_COMMAND', error_message: message })
      t.notOk(run.events.some((e) => e.type === 'PROCESSING' && e.stage === 'PROBING'), 'ffmpeg never finished a run to probe')
    })
  }
})
