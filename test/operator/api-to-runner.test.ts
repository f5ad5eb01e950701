import t from 'tap'
import { eventually } from '../harness/eventually.js'
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { GetObjectCommand } from '@aws-sdk/client-s3'
import { destinationFields, startS3 } from '../harness/s3.js'
import { downloadAndProbe } from '../e2e/download.js'
import { startKube } from '../harness/kube.js'
import { makeClip, serveFiles } from '../harness/media.js'
import { scratchDir } from '../harness/scratch.js'
import { buildZip } from '../harness/zip-writer.js'
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
// The pod's two containers run at once, and the command's end can be seen before the second has exited: wait for both, by name.
const containersRun = (commandId: string) => eventually(`both containers of ${commandId} to end`, () => {
  const runs = service.pods.runs.filter((r) => r.podEnv.FFKUBE_COMMAND_ID === commandId)
  return runs.length === 2 ? runs.map((r) => [r.name, r.exitCode]).sort() : undefined
})

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
  t.same(await containersRun(done.command_id), [['ffmpeg', 0], ['upload', 0]])
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
  t.same(await containersRun(done.command_id), [['ffmpeg', 1], ['upload', 0]], 'the upload container stopped at the run\'s failure record')
})


t.test('a zip folder is unpacked by the fetch phase and read by ffmpeg in the ffmpeg container; a hostile one ends FAILED in the fetch phase', async (t) => {
  const clipBytes = await readFile(clip)
  await writeFile(join(dir, 'parts.zip'), buildZip([{ name: 'clips/a.mp4', data: clipBytes }, { name: 'list.txt', data: "file 'clips/a.mp4'\nfile 'clips/a.mp4'\n" }]))
  await writeFile(join(dir, 'hostile.zip'), buildZip([{ name: 'clips/a.mp4', data: clipBytes }, { name: 'list.txt', data: "file 'clips/a.mp4'\nfile '/etc/passwd'\n" }]))
  const zips = await serveFiles(t, [join(dir, 'parts.zip'), join(dir, 'hostile.zip')])
  const done = await runToEnd('/run-ffmpeg-command', {
    input_compressed_folder: zips.url(join(dir, 'parts.zip')),
    output_files: { out_joined: 'joined.mp4' },
    ffmpeg_command: 'ffmpeg -f concat -i list.txt -c copy {{out_joined}}',
  })
  t.equal(done.status, 'SUCCESS', JSON.stringify(done))
  t.ok(done.output_files.out_joined.duration > 1.8, 'both clips of the list were read in the ffmpeg container')
  const mc = await mediaCommandIn(kc, service.namespace, done.command_id, 'SUCCESS', TIMEOUT)
  t.match(mc.spec.compressedFolder, { url: zips.url(join(dir, 'parts.zip')), managed: false, maxBytes: Number, maxEntries: Number, maxRatio: Number }, 'the CR carries the folder and its caps')
  t.same(await containersRun(done.command_id), [['ffmpeg', 0], ['upload', 0]])

  const hostile = await runToEnd('/run-ffmpeg-command', {
    input_compressed_folder: zips.url(join(dir, 'hostile.zip')),
    output_files: { out_joined: 'joined.mp4' },
    ffmpeg_command: 'ffmpeg -f concat -i list.txt -c copy {{out_joined}}',
  })
  t.match(hostile, { status: 'FAILED', error_status: 'FOLDER_UNSAFE_PLAYLIST', error_message: /file "list\.txt" line 2: entry "\/etc\/passwd"/ })
  t.same(await containersRun(hostile.command_id), [['ffmpeg', 1], ['upload', 0]], 'the fetch phase failed it; the upload container stopped at its failure record')
})

t.test('chained, multiple and run-ytdlp commands complete through MediaCommands and Jobs too', async (t) => {
  const chained = await runToEnd('/run-chained-ffmpeg-commands', {
    input_files: { in_video: media.url(clip) },
    output_files: { out_gif: 'preview.gif' },
    ffmpeg_commands: [
      'ffmpeg -t 1 -i {{in_video}} -vf fps=5,scale=160:-1,palettegen palette.png',
      'ffmpeg -t 1 -i <<in_video>> -i palette.png -lavfi fps=5,scale=160:-1[x];[x][1:v]paletteuse <<out_gif>>',
    ],
  })
  t.equal(chained.status, 'SUCCESS', JSON.stringify(chained))
  t.match(chained.output_files.out_gif, { filename: 'preview.gif', width: 160 }, 'the second command read the file the first one wrote in the shared work volume')

  const { command_ids } = await service.client.post('/run-multiple-ffmpeg-commands', {
    commands: [
      { input_files: { in_a: media.url(clip) }, output_files: { out_a: 'a.mp3' }, ffmpeg_command: 'ffmpeg -i {{in_a}} -vn -c:a libmp3lame {{out_a}}' },
      { input_files: { in_b: media.url(clip) }, output_files: { out_b: 'b.jpg' }, ffmpeg_command: 'ffmpeg -i {{in_b}} -frames:v 1 {{out_b}}' },
    ],
  })
  const [a, b] = await Promise.all(command_ids.map((id: string) => service.client.waitForCommand(id, TIMEOUT)))
  t.match(a.output_files.out_a, { filename: 'a.mp3', codec: 'mp3' })
  t.match(b.output_files.out_b, { filename: 'b.jpg', file_type: 'image' })
  for (const id of command_ids) t.same(await containersRun(id), [['ffmpeg', 0], ['upload', 0]], `${id}: its own Job`)

  const ytdlp = await runToEnd('/run-ytdlp-command', {
    input_urls: { in_talk: media.url(clip) },
    ffmpeg_command: '-i {{in_talk}} -vn -c:a libmp3lame {{out_audio}}',
    output_files: { out_audio: 'talk.mp3' },
  })
  t.equal(ytdlp.status, 'SUCCESS', JSON.stringify(ytdlp))
  t.match(ytdlp.output_files.out_audio, { filename: 'talk.mp3', file_type: 'audio', codec: 'mp3' })
})

t.test('a command into a storage destination uploads from the upload container with the per-command Secret', async (t) => {
  const customer = await startS3(t, { server: 'minio' })
  const bucket = await customer.createBucket('customer-media')
  // Reached by a loopback host name (raw IP endpoints are refused), allowed with ALLOW_PRIVATE_NETWORKS.
  const created = await service.client.request('POST', '/storage-destinations', { name: 'customer', prefix: 'exports', ...destinationFields(customer, bucket) })
  t.equal(created.status, 201, JSON.stringify(created.body))
  const done = await runToEnd('/run-ffmpeg-command', {
    input_files: { in_video: media.url(clip) },
    output_files: { out_thumb: 'thumb.jpg' },
    ffmpeg_command: 'ffmpeg -i {{in_video}} -frames:v 1 {{out_thumb}}',
    storage_destination_id: created.body.storage_destination_id,
  })
  t.equal(done.status, 'SUCCESS', JSON.stringify(done))
  const key = `exports/${done.command_id}/thumb.jpg`
  t.match(done.output_files.out_thumb, { storage_location: 'EXTERNAL', external_object_key: key, external_uri: `s3://${bucket}/${key}` })
  const client = customer.client()
  t.teardown(() => client.destroy())
  const object = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }))
  t.ok((await object.Body!.transformToByteArray()).length > 0, 'the object is in the customer\'s bucket')
  const runs = service.pods.runs.filter((r) => r.podEnv.FFKUBE_COMMAND_ID === done.command_id)
  const withCredentials = runs.filter((r) => r.podEnv.FFKUBE_DESTINATION_CREDENTIALS_FILE !== undefined).map((r) => r.name)
  t.same(withCredentials, ['upload'], 'only the upload container is told where the destination credentials are')
})
