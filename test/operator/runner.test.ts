import t from 'tap'
import { readdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { GetObjectCommand } from '@aws-sdk/client-s3'
import { CoreV1Api } from '@kubernetes/client-node'
import { connect, JSONCodec } from 'nats'
import { KubernetesExecutor } from '../../api/executors/kubernetes-executor.js'
import { toolPath } from '../../api/local/tools.js'
import { STATUS_STREAM, statusSubject, type StatusEvent } from '../../contracts/status-events.js'
import { CREDENTIALS_VOLUME, WORK_VOLUME } from '../../operator/job-builder.js'
import { natsPublisher } from '../../operator/terminal-publisher.js'
import { startKube } from '../harness/kube.js'
import { makeClip, serveFiles } from '../harness/media.js'
import { startNats } from '../harness/nats.js'
import { startS3 } from '../harness/s3.js'
import { scratchDir } from '../harness/scratch.js'
import { commandSpec, jobConfig } from './fixtures.js'
import { getMediaCommand, installCrd, mediaCommandIn, newNamespace, settings, startOperator, testLogger } from './kube-setup.js'
import { eventually } from '../harness/eventually.js'
import { NodeAgent } from './node-agent.js'
import { PodRunner } from './pod-runner.js'

const kube = await startKube(t)
const kc = kube.kubeConfig()
await installCrd(kc)
const [nats, s3, dir] = await Promise.all([startNats(t), startS3(t), scratchDir(t, 'ffk-node-')])
const clip = await makeClip(join(dir, 'clip.mp4'), { seconds: 1 })
const files = await serveFiles(t, [clip])

const ns = await newNamespace(kc, 'runner')
// The chart's storage Secret, which only the upload container mounts; the node reads it from the apiserver.
await kc.makeApiClient(CoreV1Api).createNamespacedSecret({
  namespace: ns,
  body: { metadata: { name: jobConfig.uploadSecretName }, stringData: { [jobConfig.uploadSecretKey]: JSON.stringify({ accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey }) } },
})
const pods = new PodRunner({
  kubeConfig: kc, namespace: ns, root: dir, imageCommand: jobConfig.runnerCommand,
  imageEnv: { PATH: process.env.PATH!, LOG_LEVEL: 'warn', FFMPEG_PATH: toolPath('ffmpeg'), FFPROBE_PATH: toolPath('ffprobe'), YTDLP_PATH: toolPath('yt-dlp') },
})
const agent = new NodeAgent(kc, ns, 'runner', pods)
await agent.start()
t.teardown(() => agent.stop())
const nc = await connect({ servers: nats.url })
t.teardown(() => nc.close())
await startOperator(t, kc, settings(ns, {
  job: {
    ...jobConfig,
    natsUrl: nats.url,
    runnerEnv: { S3_ENDPOINT: s3.endpoint, S3_BUCKET: s3.bucket, S3_REGION: s3.region, S3_FORCE_PATH_STYLE: 'true', ALLOW_PRIVATE_NETWORKS: '1' },
  },
}), { nats: nc, publisher: natsPublisher(nc, testLogger) })
const executor = new KubernetesExecutor({ kubeConfig: kc, namespace: ns })
const jsm = await nc.jetstreamManager()
const codec = JSONCodec<StatusEvent>()
const lastEvent = async (id: string) => codec.decode((await jsm.streams.getMessage(STATUS_STREAM, { last_by_subj: statusSubject(id) })).data)

const ok = commandSpec({
  inputFiles: { in_video: files.url(clip) },
  outputFiles: { out_thumb: 'thumb.jpg' },
  ffmpegCommands: ['ffmpeg -i {{in_video}} -frames:v 1 {{out_thumb}}'],
})
await executor.execute(ok)
const okCr = await mediaCommandIn(kc, ns, ok.commandId, 'SUCCESS', 90_000)
// The two containers run at once, and the command's end can be seen before the second has exited: wait for both, by name.
const runsOf = (id: string) => eventually(`both containers of ${id} to end`, () => {
  const runs = pods.runs.filter((r) => r.podEnv.FFKUBE_COMMAND_ID === id)
  return runs.length === 2 ? runs.sort((a, b) => a.name.localeCompare(b.name)) : undefined
})

t.test('the real runner runs each container of the Job as its own phase: CR → Job → ffmpeg (fetch-run) beside upload → NATS and S3 → SUCCESS', async (t) => {
  t.same((await runsOf(ok.commandId)).map((r) => [r.name, r.argv.slice(0, 2), r.exitCode]), [
    ['ffmpeg', ['--phase', 'fetch-run'], 0], ['upload', ['--phase', 'upload'], 0],
  ], 'two runner processes, each with its container\'s argv')
  t.equal(okCr.status!.progress, 100)
  const withOutputs = await eventually('the outputs in the CR status', async () => {
    const mc = await getMediaCommand(kc, ns, ok.commandId)
    return mc.status?.outputs ? mc : undefined
  })
  t.match(withOutputs.status!.outputs, [{ alias: 'out_thumb', filename: 'thumb.jpg', sizeBytes: Number }], 'the upload phase\'s SUCCESS event put the outputs in the CR')
  const success = await lastEvent(ok.commandId)
  t.match(success, { type: 'SUCCESS', command_id: ok.commandId, output_files: { out_thumb: { filename: 'thumb.jpg', width: 320 } } }, 'the runner reported SUCCESS on NATS, with the run phase\'s probe')
  const key = (success as { output_files: Record<string, { object_key: string }> }).output_files.out_thumb!.object_key
  const client = s3.client()
  t.teardown(() => client.destroy())
  const object = await client.send(new GetObjectCommand({ Bucket: s3.bucket, Key: key }))
  t.ok((object.ContentLength ?? 0) > 0, `the output is in the bucket (${key})`)
  const pod = (await kc.makeApiClient(CoreV1Api).listNamespacedPod({ namespace: ns, labelSelector: `ffkube.io/command-id=${ok.commandId}` })).items[0]
  t.equal(pod?.status?.phase, 'Succeeded')
  t.same(pod?.status?.containerStatuses?.map((s) => [s.name, s.state?.terminated?.exitCode]), [['ffmpeg', 0], ['upload', 0]], 'the pod status shows each container\'s exit')
})

t.test('the ffmpeg container gets no storage credential in its env, mounts or files, and fetches and runs without one', async (t) => {
  const [run, upload] = await runsOf(ok.commandId)
  for (const container of [run!]) {
    t.notOk('S3_CREDENTIALS_FILE' in container.podEnv, `${container.name}: no S3_CREDENTIALS_FILE`)
    t.notOk(Object.keys(container.podEnv).some((name) => /SECRET|ACCESS_KEY|PASSWORD|TOKEN|CREDENTIAL/.test(name)), `${container.name}: no credential-looking variable`)
    t.notOk(Object.values(container.podEnv).some((value) => value.includes(s3.secretAccessKey)), `${container.name}: no secret in any value`)
    t.notOk(container.mounts.includes(CREDENTIALS_VOLUME), `${container.name}: the storage Secret is not mounted`)
    t.same(container.mounts, [WORK_VOLUME], `${container.name}: the work volume only, not the upload container's scratch volume`)
    t.equal(container.podEnv.FFKUBE_STATUS_REPORTER, 'nats')
  }
  t.equal(run!.exitCode, 0, 'ffmpeg ran, checked and probed its output without any credential')
  t.ok(upload!.podEnv.S3_CREDENTIALS_FILE, 'only the upload container is told where the credentials are')
  t.ok(upload!.mounts.includes(CREDENTIALS_VOLUME), 'and only it mounts them')
  // Everything the ffmpeg container could read after (or while) the upload container worked beside it.
  const work = join(dir, run!.pod, 'volumes', WORK_VOLUME)
  const files = (await readdir(work, { recursive: true, withFileTypes: true })).filter((e) => e.isFile())
  t.ok(files.length > 0, `the work volume was read (${files.length} files)`)
  for (const file of files) {
    const bytes = await readFile(join(file.parentPath, file.name), 'utf8')
    t.notOk(bytes.includes(s3.secretAccessKey) || bytes.includes(s3.accessKeyId), `${file.name}: no credential in the work volume`)
  }
})

t.test('a fetch that fails ends both containers and the CR carries the runner\'s own reason', async (t) => {
  const missing = commandSpec({
    inputFiles: { in_video: files.url(join(dir, 'nope.mp4')) },
    outputFiles: { out_thumb: 'thumb.jpg' },
    ffmpegCommands: ['ffmpeg -i {{in_video}} -frames:v 1 {{out_thumb}}'],
  })
  await executor.execute(missing)
  const failedCr = await mediaCommandIn(kc, ns, missing.commandId, 'FAILED', 90_000)
  t.same((await runsOf(missing.commandId)).map((r) => [r.name, r.exitCode]), [['ffmpeg', 1], ['upload', 0]], 'the upload container stopped at the run\'s failure record, without a word')
  t.equal(failedCr.status!.errorStatus, 'INPUT_HTTP_STATUS', 'the CR carries the runner\'s own reason, from its FAILED event')
  t.equal(failedCr.status!.runnerErrorStatus, 'INPUT_HTTP_STATUS')
  const failed = await lastEvent(missing.commandId)
  t.match(failed, { type: 'FAILED', command_id: missing.commandId, error_status: 'INPUT_HTTP_STATUS' }, 'the fetch phase reported its failure; the operator\'s duplicate was dropped')
})
