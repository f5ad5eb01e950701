/**
 * The storage quota with EXECUTOR=kubernetes: the MediaCommand carries the
 * room its account had left at hand-off, the runner's upload container refuses
 * outputs past it before storing any, and the CR's status says what the API
 * says; outputs that fit are stored and weighed by the status projector as
 * for local runners (test/e2e/storage-quota.test.ts).
 */
import { ListObjectsV2Command } from '@aws-sdk/client-s3'
import { join } from 'node:path'
import t from 'tap'
import { startKube } from '../harness/kube.js'
import { makeClip, serveFiles } from '../harness/media.js'
import { scratchDir } from '../harness/scratch.js'
import { installCrd, mediaCommandIn } from './kube-setup.js'
import { startKubernetesService } from './kubernetes-service.js'

const QUOTA = 200_000
const TIMEOUT = 120_000

t.test('on Kubernetes, outputs past the room left are refused by the runner and the CR and the API both say FAILED; outputs that fit are counted', async (t) => {
  const kube = await startKube(t)
  const kc = kube.kubeConfig()
  await installCrd(kc)
  const dir = await scratchDir(t, 'ffkube-quota-kube-')
  const clip = await makeClip(join(dir, 'clip.mp4'), { seconds: 1, width: 320, height: 240 })
  const media = await serveFiles(t, [clip])
  const service = await startKubernetesService(t, kc, { storageQuotas: { free: 0, trial: 0, growth: 0, business: QUOTA } })
  const objects = async (commandId: string) => {
    const listed = await service.s3.client().send(new ListObjectsV2Command({ Bucket: service.s3.bucket }))
    return (listed.Contents ?? []).map((object) => object.Key ?? '').filter((key) => key.includes(commandId))
  }
  const stored = async () => (await service.client.request('GET', '/usage?days=1')).body.storage

  // Raw video: 320 x 240 x 1.5 bytes a frame, 25 frames: ~2.9 MB, far past 200,000 bytes.
  const { command_id: over } = await service.client.post('/run-ffmpeg-command', {
    input_files: { in_v: media.url(clip) },
    output_files: { out_raw: 'raw.nut' },
    ffmpeg_command: 'ffmpeg -i {{in_v}} -c:v rawvideo -an {{out_raw}}',
  })
  const refused = await service.client.waitForCommand(over, TIMEOUT)
  t.match(refused, { status: 'FAILED', error_status: 'STORAGE_QUOTA_EXCEEDED', error_message: /^the outputs hold .*\(200000 bytes\) the account had left of its plan's storage quota when the command started/ }, JSON.stringify(refused))
  t.same(await objects(over), [], 'nothing of it is in the bucket')
  const refusedCr = await mediaCommandIn(kc, service.namespace, over, 'FAILED', TIMEOUT)
  t.match(refusedCr, { spec: { storageRoomBytes: QUOTA }, status: { phase: 'FAILED', errorStatus: 'STORAGE_QUOTA_EXCEEDED' } }, 'kubectl get mc says what the API says')
  t.same(await stored(), { stored_bytes: 0, quota_bytes: QUOTA })

  const { command_id: fits } = await service.client.post('/run-ffmpeg-command', {
    input_files: { in_v: media.url(clip) },
    output_files: { out_thumb: 'thumb.jpg' },
    ffmpeg_command: 'ffmpeg -i {{in_v}} -frames:v 1 {{out_thumb}}',
  })
  const done = await service.client.waitForCommand(fits, TIMEOUT)
  t.equal(done.status, 'SUCCESS', JSON.stringify(done))
  t.equal((await stored()).stored_bytes, Math.round(done.output_files.out_thumb.size_mbytes * 1024 * 1024), 'the output counted with its size')
  t.equal((await objects(fits)).length, 1)
  t.match(await mediaCommandIn(kc, service.namespace, fits, 'SUCCESS', TIMEOUT), { spec: { storageRoomBytes: QUOTA } })
})
