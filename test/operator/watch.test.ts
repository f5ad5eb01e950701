/**
 * Watching a command through HTTP with EXECUTOR=kubernetes: the API, the
 * dispatcher, the status and log projectors, the operator and the test node
 * agent running the Job's containers with the real runner, which publishes
 * progress and its tools' stderr over NATS; a second API replica streams
 * the same command. The slow job is a real filter
 * (nlmeans) on a 10 s clip: the runner's argument policy, which is on here,
 * refuses `-re`.
 */
import t from 'tap'
import { join } from 'node:path'
import { eventually } from '../harness/eventually.js'
import { startKube } from '../harness/kube.js'
import { createLogger } from '../../api/logger.js'
import { buildServer } from '../../api/server.js'
import { makeClip, serveFiles } from '../harness/media.js'
import { scratchDir } from '../harness/scratch.js'
import { openEventStream } from '../harness/sse.js'
import { installCrd } from './kube-setup.js'
import { startKubernetesService } from './kubernetes-service.js'

const kube = await startKube(t)
const kc = kube.kubeConfig()
await installCrd(kc)
const dir = await scratchDir(t, 'ffkube-watch-kube-')
const [clip, short] = await Promise.all([makeClip(join(dir, 'ten.mp4'), { seconds: 10 }), makeClip(join(dir, 'short.mp4'), { seconds: 1 })])
const media = await serveFiles(t, [clip, short])
const service = await startKubernetesService(t, kc)
const key = { 'x-api-key': service.apiKey }
// A second API replica on the same database: it shares nothing with the first, the projectors or the operator but MongoDB.
const replica = await buildServer({
  logger: createLogger('test', 'silent'),
  app: { db: service.api.db, secretBox: service.api.secretBox, s3: service.api.s3, s3Bucket: service.api.s3Bucket, rateLimits: { free: 0, trial: 0, growth: 0, business: 0 } },
})
t.teardown(() => replica.close())
const replicaUrl = await replica.listen({ port: 0, host: '127.0.0.1' })
const RANK: Record<string, number> = { QUEUED: 0, PROCESSING: 1, SUCCESS: 2, FAILED: 2 }

t.test('the event stream of a command run by a Job goes from QUEUED to SUCCESS with progress between, and ends with GET', async (t) => {
  const { command_id } = await service.client.post('/run-ffmpeg-command', {
    input_files: { in_video: media.url(clip) },
    output_files: { out_video: 'denoised.mp4' },
    ffmpeg_command: 'ffmpeg -i {{in_video}} -vf nlmeans -c:v libx264 -preset ultrafast -c:a copy {{out_video}}',
  })
  const stream = await openEventStream(`${service.baseUrl}/api/v1/commands/${command_id}/events`, key)
  const other = await openEventStream(`${replicaUrl}/api/v1/commands/${command_id}/events`, key)
  t.equal(stream.status, 200)
  const [events, onReplica] = await Promise.all([stream.done, other.done])
  t.equal(onReplica.at(-1)?.raw, events.at(-1)?.raw, 'the other replica streams the same end')
  t.ok(onReplica.some((e) => e.data.status === 'PROCESSING' && e.data.progress > 1 && e.data.progress < 99), 'and progress on the way')
  // The Job's pod starts long after the answer to the POST: the stream opens on the accepted record.
  t.equal(events[0]?.data.status, 'QUEUED')
  const ranks = events.map((e) => RANK[e.data.status as string] as number)
  t.same(ranks, [...ranks].sort((a, b) => a - b), 'statuses only move forward')
  const ids = events.map((e) => Number(e.id))
  t.same(ids, [...new Set(ids)].sort((a, b) => a - b), 'ids grow with every event')
  const summary = events.map((e) => `${e.data.status}:${e.data.progress}:${e.data.processing_stage}`).join(' ')
  t.ok(events.some((e) => e.data.status === 'PROCESSING' && e.data.progress > 1 && e.data.progress < 99), summary)
  const last = events.at(-1)!
  t.match(last.data, { status: 'SUCCESS', progress: 100, processing_stage: null })
  t.equal(last.raw, await (await fetch(`${service.baseUrl}/api/v1/commands/${command_id}`, { headers: key })).text(), 'the final event is GET, byte for byte')

  const logs = await service.client.request('GET', `/commands/${command_id}/logs`)
  t.equal(logs.status, 200)
  t.match(logs.body, { command_id, status: 'SUCCESS', truncated: false })
})

t.test("the log of a Job's FAILED command holds ffmpeg's error line and no path of the pod or the host", async (t) => {
  const { command_id } = await service.client.post('/run-ffmpeg-command', {
    input_files: { in_video: media.url(short) },
    output_files: { out_video: 'out.mp4' },
    ffmpeg_command: 'ffmpeg -i {{in_video}} -c:v nosuchencoder {{out_video}}',
  })
  const done = await service.client.waitForCommand(command_id, 120_000)
  t.equal(done.status, 'FAILED')
  const logs = await eventually('the log to hold the error line', async () => {
    const { body } = await service.client.request('GET', `/commands/${command_id}/logs`)
    return body.log.includes('nosuchencoder') ? body : null
  })
  t.match(logs, { command_id, status: 'FAILED' })
  t.match(logs.log, /==> ffmpeg\n/)
  t.match(logs.log, /Unknown encoder 'nosuchencoder'/)
  t.match(logs.log, /from 'in_video'/, 'the input is named by its alias')
  t.notOk(logs.log.includes(dir), 'no path of the test host')
  t.notOk(/(^|[\s'"])\/(tmp|home|root|work)\b/m.test(logs.log), 'no absolute path at all')
})

t.test("another account's command is 404 for its events and its logs", async (t) => {
  const { command_id } = await service.client.post('/run-ffmpeg-command', {
    input_files: { in_video: media.url(short) },
    output_files: { out_thumb: 'thumb.jpg' },
    ffmpeg_command: 'ffmpeg -i {{in_video}} -frames:v 1 {{out_thumb}}',
  })
  const other = { 'x-api-key': (await service.api.createAccount('business')).api_key }
  for (const path of ['events', 'logs']) {
    const response = await fetch(`${service.baseUrl}/api/v1/commands/${command_id}/${path}`, { headers: other })
    t.equal(response.status, 404, path)
  }
  await service.client.waitForCommand(command_id, 120_000)
})
