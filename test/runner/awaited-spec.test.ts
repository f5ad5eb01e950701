import { ListObjectsV2Command } from '@aws-sdk/client-s3'
import { mkdir, rename, symlink, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { PassThrough, Readable } from 'node:stream'
import t from 'tap'
import type { CommandSpec } from '../../contracts/command-spec.js'
import type { StatusEvent } from '../../contracts/status-events.js'
import { toolPath } from '../../api/local/tools.js'
import { awaitSpecFile } from '../../runner-image/runner/awaited-spec.js'
import { main } from '../../runner-image/runner/main.js'
import { makeClip, serveFiles } from '../harness/media.js'
import { startS3 } from '../harness/s3.js'
import { scratchDir } from '../harness/scratch.js'
import { specOf, storageEnv } from './harness.js'

/**
 * A downward API volume as the kubelet keeps it: the file is a link through
 * `..data` to a timestamped directory, and an update writes a new directory
 * and renames a new `..data` link over the old one.
 */
async function claimVolume(dir: string): Promise<{ file: string; write(text: string): Promise<void> }> {
  await mkdir(dir, { recursive: true })
  let version = 0
  const write = async (text: string) => {
    const next = `..2026_11_28_01_00_00.${++version}`
    await mkdir(join(dir, next))
    await writeFile(join(dir, next, 'spec.json'), text)
    await symlink(next, join(dir, '..data_tmp'))
    await rename(join(dir, '..data_tmp'), join(dir, '..data'))
  }
  await write('')
  await symlink('..data/spec.json', join(dir, 'spec.json'))
  return { file: join(dir, 'spec.json'), write }
}

/** One container of a warm pod: its own main() call, no spec anywhere but the claim file. */
async function warmContainer(phase: string, claimFile: string, workDir: string, env: NodeJS.ProcessEnv): Promise<{ exitCode: number; events: StatusEvent[] }> {
  const stdout = new PassThrough()
  let raw = ''
  stdout.on('data', (chunk: Buffer) => (raw += chunk.toString('utf8')))
  const exitCode = await main({
    argv: ['--phase', phase, '--work-dir', workDir, '--await-spec', claimFile],
    env: {
      PATH: process.env.PATH, LOG_LEVEL: 'warn', ALLOW_PRIVATE_NETWORKS: '1',
      FFMPEG_PATH: toolPath('ffmpeg'), FFPROBE_PATH: toolPath('ffprobe'), YTDLP_PATH: toolPath('yt-dlp'),
      ...env,
    },
    stdin: Readable.from([]),
    stdout,
  })
  return { exitCode, events: raw.split('\n').filter((line) => line && !line.startsWith('{"log_chunk"')).map((line) => JSON.parse(line) as StatusEvent) }
}

t.test('waits for the claim file to hold a spec, across the kubelet\'s atomic swap', async (t) => {
  const volume = await claimVolume(join(await scratchDir(t, 'ffkube-claim-'), 'claim'))
  const awaited = awaitSpecFile(volume.file)
  await volume.write('{"commandId":"c1"}')
  t.equal(await awaited, '{"commandId":"c1"}', 'the file was empty when the wait began: only the swapped-in spec can be this')
})

t.test('a wait that is given up rejects with the abort', async (t) => {
  const volume = await claimVolume(join(await scratchDir(t, 'ffkube-claim-'), 'claim'))
  const controller = new AbortController()
  const awaited = awaitSpecFile(volume.file, { signal: controller.signal })
  controller.abort(new Error('stopping'))
  await t.rejects(awaited, /stopping/)
})

t.test('both containers of a warm pod start without a command, take it from the claim file and run it to SUCCESS', async (t) => {
  const dir = await scratchDir(t, 'ffkube-warm-runner-')
  const s3 = await startS3(t)
  const clip = await makeClip(join(dir, 'clip.mp4'), { seconds: 1 })
  const server = await serveFiles(t, [clip])
  const credentials = join(dir, 'credentials.json')
  await writeFile(credentials, JSON.stringify({ accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey }))
  const spec: CommandSpec = specOf({
    inputFiles: { in_video: server.url(clip) },
    outputFiles: { out_thumb: 'thumb.jpg' },
    ffmpegCommands: ['ffmpeg -i {{in_video}} -frames:v 1 {{out_thumb}}'],
  })
  const volume = await claimVolume(join(dir, 'claim'))
  const work = join(dir, 'work')
  await mkdir(work)
  const containers = Promise.all([
    warmContainer('fetch-run', volume.file, work, storageEnv(s3)),
    warmContainer('upload', volume.file, work, { ...storageEnv(s3), S3_CREDENTIALS_FILE: credentials }),
  ])
  await volume.write(JSON.stringify(spec))
  const [run, upload] = await containers
  t.equal(run.exitCode, 0)
  t.ok(run.events.length > 0 && run.events.every((e) => e.command_id === spec.commandId), 'the run container reports as the claimed command')
  t.equal(upload.exitCode, 0)
  t.match(upload.events.at(-1), { type: 'SUCCESS', command_id: spec.commandId, output_files: { out_thumb: { filename: 'thumb.jpg', width: 320, height: 240 } } })
  const client = s3.client()
  t.teardown(() => client.destroy())
  const listed = await client.send(new ListObjectsV2Command({ Bucket: s3.bucket, Prefix: `outputs/${spec.commandId}/` }))
  t.equal(listed.KeyCount, 1, 'the output is stored under the claimed command')
})

t.test('a claim file that holds no spec fails the runner before it reports anything', async (t) => {
  const dir = await scratchDir(t, 'ffkube-warm-runner-')
  const volume = await claimVolume(join(dir, 'claim'))
  const work = join(dir, 'work')
  await mkdir(work)
  const running = warmContainer('fetch-run', volume.file, work, {})
  await volume.write('{"not": "a spec"}')
  const run = await running
  t.same([run.exitCode, run.events], [2, []])
})
