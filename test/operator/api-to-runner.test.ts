import t from 'tap'
import { join } from 'node:path'
import { downloadAndProbe } from '../e2e/download.js'
import { startKube } from '../harness/kube.js'
import { makeClip, serveFiles } from '../harness/media.js'
import { scratchDir } from '../harness/scratch.js'
import { installCrd, mediaCommandIn } from './kube-setup.js'
import { startKubernetesService } from './kubernetes-service.js'

const kube = await startKube(t)
const kc = kube.kubeConfig()
await installCrd(kc)
const dir = await scratchDir(t, 'ffkube-api-kube-')
const clip = await makeClip(join(dir, 'clip.mp4'), { seconds: 1 })
const media = await serveFiles(t, [clip])
const service = await startKubernetesService(t, kc)
const TIMEOUT = 120_000

/** Submits over HTTP and polls GET until the command is SUCCESS or FAILED. */
async function runToEnd(path: string, body: unknown) {
  const { command_id } = await service.client.post(path, body)
  return service.client.waitForCommand(command_id, TIMEOUT)
}

/** Which containers of the command's pod ran, with their exit codes. */
const containersRun = (commandId: string) => service.pods.runs.filter((r) => r.podEnv.FFKUBE_COMMAND_ID === commandId).map((r) => [r.name, r.exitCode])

t.test('a command submitted over HTTP runs through a MediaCommand and its Job\'s three phases to SUCCESS in GET and in the CR', async (t) => {
  const done = await runToEnd('/run-ffmpeg-command', {
    input_files: { in_video: media.url(clip) },
    output_files: { out_thumb: 'thumb.jpg' },
    ffmpeg_command: 'ffmpeg -i {{in_video}} -frames:v 1 {{out_thumb}}',
  })
  t.equal(done.status, 'SUCCESS', JSON.stringify(done))
  t.match(done.output_files, { out_thumb: { filename: 'thumb.jpg', file_type: 'image', width: 320, height: 240, storage_url: /^http/ } })
  t.ok(done.ffmpeg_command_run_seconds > 0, 'the run phase\'s ffmpeg time reached the record')
  t.match(await downloadAndProbe(done.output_files.out_thumb.storage_url, dir, 'thumb.jpg'), { width: 320, height: 240 }, 'the output is in the bucket')
  const mc = await mediaCommandIn(kc, service.namespace, done.command_id, 'SUCCESS', TIMEOUT)
  t.match(mc.status, { phase: 'SUCCESS', progress: 100, outputs: [{ alias: 'out_thumb', filename: 'thumb.jpg' }] })
  t.same(containersRun(done.command_id), [['fetch', 0], ['ffmpeg', 0], ['upload', 0]])
})

t.test('a download-only yt-dlp command delivers its download through the three phases', async (t) => {
  const done = await runToEnd('/ytdlp-download', { input_urls: { in_talk: media.url(clip) } })
  t.equal(done.status, 'SUCCESS', JSON.stringify(done))
  t.match(done.output_files.out_talk, { filename: 'talk.mp4', file_type: 'video', width: 320 })
  t.equal(done.ffmpeg_command_run_seconds, null)
})

t.test('a command whose ffmpeg fails at run time ends FAILED with the runner\'s reason in GET and in the CR, and uploads nothing', async (t) => {
  const done = await runToEnd('/run-ffmpeg-command', {
    input_files: { in_video: media.url(clip) },
    output_files: { out_video: 'out.mp4' },
    ffmpeg_command: 'ffmpeg -i {{in_video}} -c:v nosuchencoder {{out_video}}',
  })
  t.equal(done.status, 'FAILED', JSON.stringify(done))
  t.equal(done.error_status, 'FFMPEG_FAILED')
  t.match(done.error_message, /nosuchencoder/)
  const cr = await mediaCommandIn(kc, service.namespace, done.command_id, 'FAILED', TIMEOUT)
  t.match(cr.status, { phase: 'FAILED', errorStatus: 'FFMPEG_FAILED', runnerErrorStatus: 'FFMPEG_FAILED' })
  t.same(containersRun(done.command_id), [['fetch', 0], ['ffmpeg', 1]], 'the upload container never ran')
})

