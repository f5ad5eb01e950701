/**
 * On Kubernetes, a stored file's storage_url as a command input with the
 * runners' private-network guard on: the Job's ffmpeg container (its fetch phase) reads it from
 * managed storage (a presigned GET, so without the storage Secret), while a
 * look-alike URL of the same bucket is still refused by the guard.
 */
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { eventually } from '../harness/eventually.js'
import { startKube } from '../harness/kube.js'
import { makeClip } from '../harness/media.js'
import { scratchDir } from '../harness/scratch.js'
import { installCrd } from './kube-setup.js'
import { startKubernetesService } from './kubernetes-service.js'

const kube = await startKube(t)
const kc = kube.kubeConfig()
await installCrd(kc)
const dir = await scratchDir(t, 'ffkube-kube-storage-url-')
const clip = await makeClip(join(dir, 'clip.mp4'), { seconds: 1, width: 320, height: 240 })
const service = await startKubernetesService(t, kc, { allowPrivateNetworks: false })
const TIMEOUT = 120_000

t.test('a Job\'s fetch phase reads an upload by its storage_url with the guard on, and holds no storage credential', async (t) => {
  const form = new FormData()
  form.append('file', new Blob([await readFile(clip)], { type: 'video/mp4' }), 'clip.mp4')
  const response = await fetch(`${service.baseUrl}/api/v1/files/upload`, { method: 'POST', headers: { 'x-api-key': service.apiKey }, body: form })
  t.equal(response.status, 200)
  const file = await service.client.waitForFile(((await response.json()) as { file_id: string }).file_id)
  t.equal(file.status, 'STORED', JSON.stringify(file))

  const { command_id } = await service.client.post('/run-ffmpeg-command', {
    input_files: { in_video: file.storage_url },
    output_files: { out_thumb: 'thumb.jpg' },
    ffmpeg_command: 'ffmpeg -i {{in_video}} -frames:v 1 {{out_thumb}}',
  })
  const done = await service.client.waitForCommand(command_id, TIMEOUT)
  t.match(done, { status: 'SUCCESS', output_files: { out_thumb: { width: 320, height: 240 } } }, JSON.stringify(done))
  // The command's end can be seen before the second container has exited: wait for both.
  const runs = await eventually('both containers to end', () => {
    const ended = service.pods.runs.filter((run) => run.podEnv.FFKUBE_COMMAND_ID === command_id)
    return ended.length === 2 ? ended : undefined
  })
  t.same(runs.map((run) => [run.name, run.exitCode]).sort(), [['ffmpeg', 0], ['upload', 0]])
  const fetchRun = runs.find((run) => run.name === 'ffmpeg')
  t.equal(fetchRun?.podEnv.ALLOW_PRIVATE_NETWORKS, '0', 'the ffmpeg container, which fetches, runs with the guard on')
  t.notOk(fetchRun?.podEnv.S3_CREDENTIALS_FILE, 'the ffmpeg container has no storage credentials')
  t.same(fetchRun?.mounts, ['work'], 'nor the storage Secret mounted')
  t.match(JSON.parse(fetchRun?.podEnv.FFKUBE_COMMAND_SPEC ?? '{}'), { managedInputs: ['in_video'] }, 'the MediaCommand carries which inputs are storage_urls')

  t.test('the same bucket under another host name is still refused by the guard in the pod', async (t) => {
    const { command_id } = await service.client.post('/run-ffmpeg-command', {
      input_files: { in_video: file.storage_url.replace('//127.0.0.1:', '//localhost:') },
      output_files: { out_thumb: 'thumb.jpg' },
      ffmpeg_command: 'ffmpeg -i {{in_video}} -frames:v 1 {{out_thumb}}',
    })
    t.match(await service.client.waitForCommand(command_id, TIMEOUT), { status: 'FAILED', error_status: 'INPUT_FORBIDDEN_ADDRESS' })
  })
})
