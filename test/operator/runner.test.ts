import t from 'tap'
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { Readable, Writable } from 'node:stream'
import { GetObjectCommand } from '@aws-sdk/client-s3'
import type { V1Job } from '@kubernetes/client-node'
import { connect, JSONCodec } from 'nats'
import { KubernetesExecutor } from '../../api/executors/kubernetes-executor.js'
import { toolPath } from '../../api/local/tools.js'
import { STATUS_STREAM, statusSubject, type StatusEvent } from '../../contracts/status-events.js'
import { main as runner } from '../../runner-image/runner/main.js'
import { startKube } from '../harness/kube.js'
import { makeClip, serveFiles } from '../harness/media.js'
import { startNats } from '../harness/nats.js'
import { startS3 } from '../harness/s3.js'
import { scratchDir } from '../harness/scratch.js'
import { commandSpec, jobConfig } from './fixtures.js'
import { eventually, getMediaCommand, installCrd, newNamespace, settings, startOperator } from './kube-setup.js'
import { NodeAgent } from './node-agent.js'
import { natsPublisher } from '../../operator/terminal-publisher.js'

const kube = await startKube(t)
const kc = kube.kubeConfig()
await installCrd(kc)

t.test('the real runner runs a command with its pod\'s environment: CR → Job → runner → NATS and S3 → SUCCESS', async (t) => {
  const [nats, s3, dir] = await Promise.all([startNats(t), startS3(t), scratchDir(t, 'ffkube-op-runner-')])
  const clip = await makeClip(join(dir, 'clip.mp4'), { seconds: 1 })
  const files = await serveFiles(t, [clip])
  // Stands in for the storage Secret the upload container mounts.
  const credentials = join(dir, 'credentials.json')
  await writeFile(credentials, JSON.stringify({ accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey }))

  const envs: Array<Record<string, string>> = []
  /** Runs the pod's runner in this process: the upload container's env (a superset of the others'), paths mapped to this host. */
  const runPod = async (job: V1Job): Promise<number> => {
    const pod = job.spec!.template.spec!
    const env = Object.fromEntries(pod.containers[0]!.env!.map((e) => [e.name, e.value!]))
    envs.push(env)
    const work = join(dir, `work-${env.FFKUBE_COMMAND_ID}`)
    await mkdir(join(work, '.tmp'), { recursive: true })
    return runner({
      argv: ['--spec', '-', '--work-dir', work],
      env: {
        ...env, PATH: process.env.PATH, FFKUBE_WORK_DIR: work, TMPDIR: join(work, '.tmp'), HOME: work, LOG_LEVEL: 'warn',
        S3_CREDENTIALS_FILE: credentials,
        FFMPEG_PATH: toolPath('ffmpeg'), FFPROBE_PATH: toolPath('ffprobe'), YTDLP_PATH: toolPath('yt-dlp'),
      },
      stdin: Readable.from([env.FFKUBE_COMMAND_SPEC!]),
      stdout: new Writable({ write: (_chunk, _enc, done) => done() }),
    })
  }

  const ns = await newNamespace(kc, 'runner')
  const agent = new NodeAgent(kc, ns, 'runner', runPod)
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
  }), { nats: nc, publisher: natsPublisher(nc) })
  const executor = new KubernetesExecutor({ kubeConfig: kc, namespace: ns })
  const ok = commandSpec({
    inputFiles: { in_video: files.url(clip) },
    outputFiles: { out_thumb: 'thumb.jpg' },
    ffmpegCommands: ['ffmpeg -i {{in_video}} -frames:v 1 {{out_thumb}}'],
  })
  const missing = commandSpec({
    inputFiles: { in_video: files.url(join(dir, 'nope.mp4')) },
    outputFiles: { out_thumb: 'thumb.jpg' },
    ffmpegCommands: ['ffmpeg -i {{in_video}} -frames:v 1 {{out_thumb}}'],
  })
  await executor.execute(ok)
  await executor.execute(missing)

  const okCr = await eventually('SUCCESS', async () => {
    const mc = await getMediaCommand(kc, ns, ok.commandId)
    return mc.status?.phase === 'SUCCESS' ? mc : undefined
  }, 60_000)
  t.equal(okCr.status!.progress, 100)
  const withOutputs = await eventually('the outputs in the CR status', async () => {
    const mc = await getMediaCommand(kc, ns, ok.commandId)
    return mc.status?.outputs ? mc : undefined
  })
  t.match(withOutputs.status!.outputs, [{ alias: 'out_thumb', filename: 'thumb.jpg', sizeBytes: Number }], 'the runner\'s SUCCESS event put the outputs in the CR')
  const failedCr = await eventually('FAILED', async () => {
    const mc = await getMediaCommand(kc, ns, missing.commandId)
    return mc.status?.phase === 'FAILED' ? mc : undefined
  }, 60_000)
  t.equal(failedCr.status!.errorStatus, 'INPUT_HTTP_STATUS', 'the CR carries the runner\'s own reason, from its FAILED event')
  t.equal(failedCr.status!.runnerErrorStatus, 'INPUT_HTTP_STATUS')

  const jsm = await nc.jetstreamManager()
  const codec = JSONCodec<StatusEvent>()
  const last = async (id: string) => codec.decode((await jsm.streams.getMessage(STATUS_STREAM, { last_by_subj: statusSubject(id) })).data)
  t.match(await last(ok.commandId), { type: 'SUCCESS', command_id: ok.commandId, output_files: { out_thumb: { filename: 'thumb.jpg' } } }, 'the runner reported SUCCESS on NATS')
  const failed = await last(missing.commandId)
  t.match(failed, { type: 'FAILED', command_id: missing.commandId }, 'the runner reported its failure')
  t.not((failed as { error_status: string }).error_status, 'RUNNER_FAILED', 'the runner\'s precise reason stands: the operator\'s duplicate was dropped')

  const key = (await last(ok.commandId) as { output_files: Record<string, { object_key: string }> }).output_files.out_thumb!.object_key
  const object = await s3.client().send(new GetObjectCommand({ Bucket: s3.bucket, Key: key }))
  t.ok((object.ContentLength ?? 0) > 0, `the output is in the bucket (${key})`)
  for (const env of envs) {
    t.notOk(Object.keys(env).some((name) => /SECRET|ACCESS_KEY/.test(name)), 'no credential in the pod\'s environment')
    t.equal(env.FFKUBE_STATUS_REPORTER, 'nats')
  }
})
