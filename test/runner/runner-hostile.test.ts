import { execFile } from 'node:child_process'
import { ListObjectsV2Command } from '@aws-sdk/client-s3'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { promisify } from 'node:util'
import t from 'tap'
import { toolPath } from '../../api/local/tools.js'
import { runTool } from '../../contracts/tool-process.js'
import { probeDuration, serveFiles } from '../harness/media.js'
import { startS3 } from '../harness/s3.js'
import { scratchDir } from '../harness/scratch.js'
import { runRunner, specOf } from './harness.js'

const run = promisify(execFile)
const PRIVATE_OK = { ALLOW_PRIVATE_NETWORKS: '1' }
const MARKER = 'TOPSECRET-7f3a9c'

t.test('hostile inputs end FAILED without leaking a local file', async (t) => {
  const dir = await scratchDir(t)
  const s3 = await startS3(t)
  // A local "secret" the hostile inputs point at: a 3 s MPEG-TS clip whose service name is a marker.
  const secret = join(dir, 'secret.ts')
  await run(toolPath('ffmpeg'), [
    '-hide_banner', '-loglevel', 'error', '-f', 'lavfi', '-i', 'sine=duration=3', '-c:a', 'mp2',
    '-metadata', `service_name=${MARKER}`, '-f', 'mpegts', secret,
  ])
  const playlist = join(dir, 'list.m3u8')
  await writeFile(playlist, `#EXTM3U\n#EXT-X-TARGETDURATION:3\n#EXTINF:3,\n${secret}\n#EXTINF:3,\nfile://${secret}\n#EXT-X-ENDLIST\n`)
  const disguised = join(dir, 'clip.mp4')
  await writeFile(disguised, `#EXTM3U\n#EXT-X-TARGETDURATION:3\n#EXTINF:3,\n${secret}\n#EXT-X-ENDLIST\n`)
  const concatList = join(dir, 'list.txt')
  await writeFile(concatList, `ffconcat version 1.0\nfile ${secret}\n`)
  const server = await serveFiles(t, [playlist, disguised, concatList])

  t.test('the unhardened ffmpeg would leak the secret through the playlist (control)', async (t) => {
    const leaked = join(dir, 'leaked.mkv')
    await run(toolPath('ffmpeg'), ['-hide_banner', '-loglevel', 'error', '-y', '-allowed_extensions', 'ALL', '-i', playlist, '-c', 'copy', leaked])
    t.ok((await probeDuration(leaked)) > 2, 'without the policy, ffmpeg reads the local file')
  })

  // A .m3u8 input, or one forced with -f hls or -f concat, is read as a list: the runner reads its
  // entries first (INVALID_COMMAND); any other input meets the demuxer whitelist (FFMPEG_FAILED).
  const cases: Array<[string, string, string, { error_status: string; error_message: RegExp }]> = [
    ['an HLS playlist naming a local file', server.url(playlist), 'ffmpeg -i {{in_video}} -c copy {{out_video}}',
      { error_status: 'INVALID_COMMAND', error_message: /^-i \{\{in_video\}\}: inputs\/in_video.m3u8: line 4: ".*secret.ts": absolute paths are not allowed$/ }],
    ['an HLS playlist disguised as an .mp4', server.url(disguised), 'ffmpeg -i {{in_video}} -c copy {{out_video}}',
      { error_status: 'FFMPEG_FAILED', error_message: /whitelist|Invalid data/ }],
    ['an HLS playlist disguised as an .mp4, forced with -f hls', server.url(disguised), 'ffmpeg -f hls -i {{in_video}} -c copy {{out_video}}',
      { error_status: 'INVALID_COMMAND', error_message: /inputs\/in_video.mp4: line 4: ".*secret.ts": absolute paths/ }],
    ['an ffconcat list naming a local file', server.url(concatList), 'ffmpeg -i {{in_video}} -c copy {{out_video}}',
      { error_status: 'FFMPEG_FAILED', error_message: /whitelist|Invalid data/ }],
    ['an ffconcat list naming a local file, forced with -f concat', server.url(concatList), 'ffmpeg -f concat -i {{in_video}} -c copy {{out_video}}',
      { error_status: 'INVALID_COMMAND', error_message: /inputs\/in_video.txt: line 2: ".*secret.ts": absolute paths/ }],
  ]
  for (const [name, url, command, failure] of cases) {
    t.test(`refuses ${name}`, async (t) => {
      const spec = specOf({ inputFiles: { in_video: url }, outputFiles: { out_video: 'x.mkv' }, ffmpegCommands: [command] })
      const result = await runRunner(dir, spec, s3, PRIVATE_OK)
      t.match(result.terminal, { type: 'FAILED', ...failure })
      t.notOk(result.raw.includes(MARKER), 'no event carries the secret')
      const client = s3.client()
      t.teardown(() => client.destroy())
      const listed = await client.send(new ListObjectsV2Command({ Bucket: s3.bucket, Prefix: `outputs/${spec.commandId}/` }))
      t.equal(listed.KeyCount ?? 0, 0, 'nothing was uploaded')
    })
  }

  t.test('refuses input URLs inside the network when private networks are not allowed', async (t) => {
    const port = new URL(server.url(playlist)).port
    const urls = [
      `http://127.0.0.1:${port}/clip.mp4`,
      `http://localhost:${port}/clip.mp4`,
      `http://[::ffff:127.0.0.1]:${port}/clip.mp4`,
      `http://2130706433:${port}/clip.mp4`,
      `http://0177.0.0.1:${port}/clip.mp4`,
      'http://169.254.169.254/latest/meta-data/iam/security-credentials/',
      'http://[fd00:ec2::254]/latest/meta-data/',
      'http://10.0.0.1/x.mp4',
    ]
    for (const url of urls) {
      const spec = specOf({ inputFiles: { in_video: url }, outputFiles: { out_video: 'x.mkv' }, ffmpegCommands: ['ffmpeg -i {{in_video}} -c copy {{out_video}}'] })
      const result = await runRunner(dir, spec, s3)
      t.match(result.terminal, { type: 'FAILED', error_status: 'INPUT_FORBIDDEN_ADDRESS' }, url)
    }
  })

  t.test('refuses hostile command strings before fetching', async (t) => {
    const commands = [
      "ffmpeg -i {{in_video}} -vf 'movie=/etc/passwd' {{out_video}}",
      `ffmpeg -f dash -i {{in_video}} {{out_video}}`,
      `ffmpeg -i {{in_video}} -i ${secret} -map 1 {{out_video}}`,
      `ffmpeg -i {{in_video}} -c copy ${join(dir, 'escape.mkv')}`,
      'ffmpeg -i {{in_video}} -f tee "[f=matroska]x.mkv|/tmp/y.mkv"',
    ]
    for (const command of commands) {
      const spec = specOf({ inputFiles: { in_video: server.url(playlist) }, outputFiles: { out_video: 'x.mkv' }, ffmpegCommands: [command] })
      const result = await runRunner(dir, spec, s3, PRIVATE_OK)
      t.match(result.terminal, { type: 'FAILED', error_status: 'INVALID_COMMAND' }, command)
    }
  })
})

t.test('runs tools with PATH and LANG as their whole environment', async (t) => {
  const dir = await scratchDir(t)
  process.env.FFKUBE_TEST_SECRET = 'do-not-pass-me'
  t.teardown(() => {
    delete process.env.FFKUBE_TEST_SECRET
  })
  const result = await runTool('env', ['-0'], { cwd: dir, timeoutMs: 5000 })
  const names = result.stdout.split('\0').filter(Boolean).map((entry) => entry.split('=')[0] as string)
  // tap's processinfo plugin patches child_process to add its own variables to every child; those are not ours.
  const ours = names.filter((name) => !name.startsWith('_TAPJS_') && name !== 'NODE_OPTIONS').sort()
  t.same(ours, ['LANG', 'PATH'])
  t.notOk(result.stdout.includes('do-not-pass-me'))
})

t.test('kills a tool at its deadline', async (t) => {
  const dir = await scratchDir(t)
  const result = await runTool('sleep', ['5'], { cwd: dir, timeoutMs: 200 })
  t.ok(result.timedOut)
  t.equal(result.signal, 'SIGKILL')
  t.ok(result.seconds < 2)
})
