/**
 * Files inside filter arguments, through HTTP in local mode: burned-in
 * subtitles and a font named by placeholders, an ASS file a chained command
 * wrote, and the hostile forms — refused at submit (400 with the policy's
 * message) or, when only the bytes tell, FAILED before ffmpeg opens them.
 */
import { copyFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { grayRegion as region, makeClip, serveFiles } from '../harness/media.js'
import { scratchDir } from '../harness/scratch.js'
import { downloadAndProbe } from './download.js'
import { Client, serviceEnvironment, startService } from './service.js'

const FONT = '/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf'
const SRT = '1\n00:00:00,000 --> 00:00:10,000\nBURNED IN\n'

t.test('filters read the command\'s own files, through HTTP in local mode', async (t) => {
  const dir = await scratchDir(t)
  const environment = await serviceEnvironment(t)
  const files = {
    srt: join(dir, 'subs.srt'),
    font: join(dir, 'DejaVuSans.ttf'),
    playlist: join(dir, 'playlist.srt'),
    lut: join(dir, 'invert.cube'),
  }
  await Promise.all([
    writeFile(files.srt, SRT),
    copyFile(FONT, files.font),
    writeFile(files.playlist, '#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXTINF:1,\n/etc/passwd\n#EXT-X-ENDLIST\n'),
    // A 2×2×2 3D LUT that inverts every colour (red varies fastest).
    writeFile(files.lut, `LUT_3D_SIZE 2\n${[0, 1].flatMap((b) => [0, 1].flatMap((g) => [0, 1].map((r) => `${1 - r} ${1 - g} ${1 - b}`))).join('\n')}\n`),
  ])
  const [service, clip] = await Promise.all([startService(t, environment), makeClip(join(dir, 'clip.mp4'), { seconds: 2, width: 320, height: 240 })])
  const media = await serveFiles(t, [clip, ...Object.values(files)])
  const api = new Client(service)
  const url = (path: string) => media.url(path)

  t.test('burns subtitles named {{in_srt}} into the bottom of the frame and leaves the top as it was', async (t) => {
    const { command_id } = await api.post('/run-ffmpeg-command', {
      input_files: { in_video: url(clip), in_srt: url(files.srt) },
      output_files: { out_plain: 'plain.png', out_subs: 'subs.png' },
      ffmpeg_command: "ffmpeg -ss 1 -i {{in_video}} -frames:v 1 {{out_plain}} -frames:v 1 -vf \"subtitles='{{in_srt}}':force_style='FontSize=28'\" {{out_subs}}",
    })
    const done = await api.waitForCommand(command_id)
    t.equal(done.status, 'SUCCESS', JSON.stringify(done))
    const plain = join(dir, `${command_id}-plain.png`)
    const subs = join(dir, `${command_id}-subs.png`)
    await downloadAndProbe(done.output_files.out_plain.storage_url, dir, `${command_id}-plain.png`)
    await downloadAndProbe(done.output_files.out_subs.storage_url, dir, `${command_id}-subs.png`)
    t.same(await region(subs, 'iw:ih/2:0:0'), await region(plain, 'iw:ih/2:0:0'), 'the top half is untouched')
    t.notSame(await region(subs, 'iw:ih/4:0:ih*3/4'), await region(plain, 'iw:ih/4:0:ih*3/4'), 'the bottom quarter holds the subtitle')
  })

  t.test('draws text with a font named fontfile={{in_font}}', async (t) => {
    const { command_id } = await api.post('/run-ffmpeg-command', {
      input_files: { in_video: url(clip), in_font: url(files.font) },
      output_files: { out_plain: 'plain.png', out_text: 'text.png' },
      ffmpeg_command: 'ffmpeg -ss 1 -i {{in_video}} -frames:v 1 {{out_plain}} -frames:v 1 -vf drawtext=fontfile={{in_font}}:text=ffkube:fontsize=40:fontcolor=white:x=10:y=h-60 {{out_text}}',
    })
    const done = await api.waitForCommand(command_id)
    t.equal(done.status, 'SUCCESS', JSON.stringify(done))
    await downloadAndProbe(done.output_files.out_plain.storage_url, dir, `${command_id}-plain.png`)
    await downloadAndProbe(done.output_files.out_text.storage_url, dir, `${command_id}-text.png`)
    const [plain, text] = [join(dir, `${command_id}-plain.png`), join(dir, `${command_id}-text.png`)]
    t.same(await region(text, 'iw:ih/2:0:0'), await region(plain, 'iw:ih/2:0:0'), 'the top half is untouched')
    t.notSame(await region(text, 'iw:60:0:ih-60'), await region(plain, 'iw:60:0:ih-60'), 'the text is where drawtext put it')
  })

  t.test('burns in an ASS file a chained command wrote (-vf ass=subs.ass)', async (t) => {
    const { command_id } = await api.post('/run-chained-ffmpeg-commands', {
      input_files: { in_video: url(clip), in_srt: url(files.srt) },
      output_files: { out_video: 'subtitled.mp4' },
      ffmpeg_commands: ['ffmpeg -i {{in_srt}} subs.ass', 'ffmpeg -i {{in_video}} -vf ass=subs.ass -c:v libx264 -preset ultrafast -c:a copy {{out_video}}'],
    })
    const done = await api.waitForCommand(command_id)
    t.equal(done.status, 'SUCCESS', JSON.stringify(done))
    t.match(done.output_files.out_video, { filename: 'subtitled.mp4', width: 320, height: 240, codec: 'h264' })
    t.same(Object.keys(done.output_files), ['out_video'], 'the intermediate ASS file is not an output')
  })

  t.test('applies a LUT named lut3d={{in_lut}} and overlays a movie source named movie={{in_logo}}', async (t) => {
    const { command_id } = await api.post('/run-ffmpeg-command', {
      input_files: { in_video: url(clip), in_lut: url(files.lut), in_logo: url(clip) },
      output_files: { out_plain: 'plain.png', out_lut: 'lut.png', out_movie: 'movie.png' },
      ffmpeg_command: 'ffmpeg -ss 1 -i {{in_video}} -frames:v 1 {{out_plain}} -frames:v 1 -vf lut3d={{in_lut}} {{out_lut}} ' +
        '-frames:v 1 -filter_complex "movie={{in_logo}},scale=80:60,negate[l];[0:v][l]overlay=0:0" {{out_movie}}',
    })
    const done = await api.waitForCommand(command_id)
    t.equal(done.status, 'SUCCESS', JSON.stringify(done))
    for (const alias of ['out_plain', 'out_lut', 'out_movie']) await downloadAndProbe(done.output_files[alias].storage_url, dir, `${command_id}-${alias}.png`)
    const [plain, lut, movie] = ['out_plain', 'out_lut', 'out_movie'].map((alias) => join(dir, `${command_id}-${alias}.png`)) as [string, string, string]
    const whole = 'iw:ih:0:0'
    const [p, l] = [await region(plain, whole), await region(lut, whole)]
    // Inverted, each pixel's grey plus the original's is about constant; unchanged, the sum varies as much as the picture.
    const spread = (values: number[]) => {
      const mean = values.reduce((sum, v) => sum + v, 0) / values.length
      return values.reduce((sum, v) => sum + Math.abs(v - mean), 0) / values.length
    }
    const sums = [...p].map((v, i) => v + (l[i] as number))
    t.ok(spread(sums) < spread([...p]) / 4, `the LUT inverts the frame (spread of the sums ${spread(sums).toFixed(1)}, of the picture ${spread([...p]).toFixed(1)})`)
    t.notSame(await region(movie, '80:60:0:0'), await region(plain, '80:60:0:0'), 'the movie source is drawn in the corner')
    t.same(await region(movie, 'iw/2:ih/2:iw/2:ih/2'), await region(plain, 'iw/2:ih/2:iw/2:ih/2'), 'and nowhere else')
  })

  // [name, ffmpeg_command, exact 400 message]
  const refused: Array<[string, string, string]> = [
    ['a placeholder in drawtext text', 'ffmpeg -i {{in_video}} -vf drawtext=text={{in_srt}} {{out_x}}',
      'ffmpeg_command: -vf: drawtext option text={{in_srt}}: placeholders may only name a file (-i, an output, or a filter\'s file option such as subtitles filename or drawtext fontfile)'],
    ['a fontfile of /etc/passwd', 'ffmpeg -i {{in_video}} -vf drawtext=fontfile=/etc/passwd:text=x {{out_x}}',
      'ffmpeg_command: -vf: drawtext option fontfile /etc/passwd: absolute paths are not allowed; name an input as {{in_alias}}'],
    ['a subtitles file leaving the work dir', 'ffmpeg -i {{in_video}} -vf subtitles=../secret.srt {{out_x}}',
      'ffmpeg_command: -vf: subtitles option filename ../secret.srt: paths leaving the work directory are not allowed; name an input as {{in_alias}}'],
    ['a protocol in a filter file option', "ffmpeg -i {{in_video}} -vf \"subtitles='http\\\\://127.0.0.1/x.srt'\" {{out_x}}",
      'ffmpeg_command: -vf: subtitles option filename http://127.0.0.1/x.srt: protocols and URLs are not allowed; name an input as {{in_alias}}'],
    ['an unknown alias in a filter file option', 'ffmpeg -i {{in_video}} -vf subtitles={{in_nope}} {{out_x}}',
      'ffmpeg_command: placeholder {{in_nope}} names no declared alias (declared: in_video, in_srt, out_x)'],
    ['a placeholder glued inside a file option', 'ffmpeg -i {{in_video}} -vf subtitles=x{{in_srt}} {{out_x}}',
      'ffmpeg_command: -vf: subtitles option filename=x{{in_srt}}: a placeholder must be the whole value of an option that names a file'],
  ]
  for (const [name, command, message] of refused) {
    t.test(`answers 400 for ${name}`, async (t) => {
      const answer = await api.request('POST', '/run-ffmpeg-command', {
        input_files: { in_video: url(clip), in_srt: url(files.srt) },
        output_files: { out_x: 'x.mp4' },
        ffmpeg_command: command,
      })
      t.equal(answer.status, 400, JSON.stringify(answer.body))
      t.equal(answer.body.message, message)
    })
  }

  t.test('fails INVALID_COMMAND, before ffmpeg opens it, a subtitle file that is really a playlist', async (t) => {
    const { command_id } = await api.post('/run-ffmpeg-command', {
      input_files: { in_video: url(clip), in_srt: url(files.playlist) },
      output_files: { out_x: 'x.mp4' },
      ffmpeg_command: 'ffmpeg -i {{in_video}} -vf subtitles={{in_srt}} {{out_x}}',
    })
    const done = await api.waitForCommand(command_id)
    t.match(done, {
      status: 'FAILED',
      error_status: 'INVALID_COMMAND',
      error_message: '-vf subtitles filename: inputs/in_srt.srt: it is an HLS playlist, not a subtitle file',
      ffmpeg_command_run_seconds: null,
    })
    t.notOk('output_files' in done)
  })
})
