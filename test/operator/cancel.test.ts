/**
 * Cancel and per-command limits with EXECUTOR=kubernetes, through HTTP, against
 * the test kube-apiserver, the operator and the test node agent: a command's
 * limits reach its MediaCommand and its Job; a cancel marks the MediaCommand,
 * the operator deletes its Job and pod, records an Event and ends it FAILED /
 * CANCELLED, and GET says the same. The node agent holds every Job, so a pod
 * exists only when a test makes it run.
 */
import t from 'tap'
import { BatchV1Api, CoreV1Api, EventsV1Api } from '@kubernetes/client-node'
import { jobNameFor } from '../../operator/job-builder.js'
import { eventually } from '../harness/eventually.js'
import { startKube } from '../harness/kube.js'
import { getMediaCommand, getTable, installCrd, mediaCommandIn } from './kube-setup.js'
import { startKubernetesService } from './kubernetes-service.js'

const kube = await startKube(t)
const kc = kube.kubeConfig()
await installCrd(kc)
const service = await startKubernetesService(t, kc, { outcome: 'hold' })
const batch = kc.makeApiClient(BatchV1Api)
const core = kc.makeApiClient(CoreV1Api)
const ns = service.namespace
const TIMEOUT = 60_000

const gone = (read: () => Promise<unknown>) => read().then(() => false, (err: { code?: number }) => err.code === 404)
const body = (extra: Record<string, unknown> = {}) => ({
  input_files: { in_video: 'http://127.0.0.1:9/never-fetched.mp4' },
  output_files: { out_video: 'out.mp4' },
  ffmpeg_command: 'ffmpeg -i {{in_video}} -c:v libx264 {{out_video}}',
  ...extra,
})

t.test('a PROCESSING command is cancelled: its Job and pod are deleted, the CR and GET end FAILED / CANCELLED, with an Event', async (t) => {
  const { command_id: id } = await service.client.post('/run-ffmpeg-command', body({ max_command_run_seconds: 120, vcpu_count: 0.5 }))
  const job = await eventually('its Job', () => service.agent.seen.find((j) => j.metadata?.labels?.['ffkube.io/command-id'] === id), TIMEOUT)

  // The limits reached the MediaCommand and the Job.
  t.match((await getMediaCommand(kc, ns, id)).spec, { timeLimitSeconds: 120, vcpuMillis: 500, memoryMib: 8192 })
  t.equal(job.spec!.activeDeadlineSeconds, 120)
  const run = job.spec!.template.spec!.containers.find((c) => c.name === 'ffmpeg')!
  // vcpu_count is the CPU limit; the request stays this test operator's JOB_CPU_REQUEST (250m), being lower.
  t.same([run.resources!.requests!.cpu, run.resources!.limits!.cpu, run.resources!.limits!.memory], ['250m', '500m', '8Gi'], 'the apiserver writes 8192Mi as 8Gi')

  await service.agent.act(id, 'running')
  // No runner runs in a held pod, so only the CR (not GET, fed by runner events) shows it running.
  await mediaCommandIn(kc, ns, id, 'PROCESSING', TIMEOUT)
  const podName = `${jobNameFor(id).slice(0, 56)}-pod`
  t.notOk(await gone(() => core.readNamespacedPod({ name: podName, namespace: ns })), 'its pod runs')

  const cancelledAt = performance.now()
  const answer = await service.client.request('POST', `/commands/${id}/cancel`)
  t.same(answer, { status: 200, body: { command_id: id, status: 'FAILED' } })
  const done = await service.client.waitForCommand(id, TIMEOUT)
  t.comment(`GET said FAILED / ${done.error_status} ${Math.round(performance.now() - cancelledAt)} ms after the cancel was sent`)
  t.match(done, { status: 'FAILED', error_status: 'CANCELLED' })
  t.notOk(done.output_files, 'no output is stored')

  const mc = await mediaCommandIn(kc, ns, id, 'FAILED', TIMEOUT)
  t.match(mc, { spec: { cancel: true }, status: { phase: 'FAILED', errorStatus: 'CANCELLED' } })
  t.has(mc.status!.conditions!.find((c) => c.type === 'Failed'), { status: 'True', reason: 'CANCELLED' })
  await eventually('its Job to be deleted', () => gone(() => batch.readNamespacedJob({ name: job.metadata!.name!, namespace: ns })), TIMEOUT)
  await eventually('its pod to be deleted', () => gone(() => core.readNamespacedPod({ name: podName, namespace: ns })), TIMEOUT)
  t.comment(`Job and pod deleted ${Math.round(performance.now() - cancelledAt)} ms after the cancel was sent`)
  const events = await eventually('the Cancelled event', async () => {
    const list = await kc.makeApiClient(EventsV1Api).listNamespacedEvent({ namespace: ns })
    return list.items.find((e) => e.regarding?.name === id && e.reason === 'Cancelled')
  }, TIMEOUT)
  t.match(events, { type: 'Warning', note: /CANCELLED/ })

  // `kubectl get mc` shows the cancel, and with -o wide the limits.
  const table = await getTable(kube, `/apis/ffkube.io/v1alpha1/namespaces/${ns}/mediacommands/${id}`)
  const names = table.columnDefinitions.map((c) => c.name)
  const cells = Object.fromEntries(names.map((name, i) => [name, table.rows[0]!.cells[i]]))
  t.match(cells, { Status: 'FAILED', Cancel: true, Limit: 120, mCPU: 500 })

  t.same(await service.client.request('POST', `/commands/${id}/cancel`), answer, 'a second cancel answers like the first')
  t.same((await service.client.request('GET', `/commands/${id}`)).body, done, 'and changes nothing')
})

t.test('a command cancelled at once ends FAILED / CANCELLED and no Job of it ever runs', async (t) => {
  const { command_id: id } = await service.client.post('/run-ffmpeg-command', body())
  t.same(await service.client.request('POST', `/commands/${id}/cancel`), { status: 200, body: { command_id: id, status: 'FAILED' } })
  t.match(await service.client.waitForCommand(id, TIMEOUT), { status: 'FAILED', error_status: 'CANCELLED' })
  // Either never handed off (no MediaCommand), or handed off before the cancel and then cancelled: never a live Job.
  const mc = await getMediaCommand(kc, ns, id).catch(() => null)
  if (mc) {
    t.match((await mediaCommandIn(kc, ns, id, 'FAILED', TIMEOUT)), { spec: { cancel: true }, status: { errorStatus: 'CANCELLED' } })
    await eventually('no Job of it', () => gone(() => batch.readNamespacedJob({ name: jobNameFor(id), namespace: ns })), TIMEOUT)
  } else {
    t.pass('it was withdrawn before its hand-off')
  }
  const later = await service.client.request('POST', `/commands/${id}/cancel`)
  t.equal(later.status, 200, 'cancelling it again still answers 200')
})

t.test('a finished command is 409, and a spec field other than cancel still cannot change', async (t) => {
  const { command_id: id } = await service.client.post('/run-ffmpeg-command', body())
  await eventually('its Job', () => service.agent.seen.find((j) => j.metadata?.labels?.['ffkube.io/command-id'] === id), TIMEOUT)
  await service.agent.act(id, 'deadline')
  t.match(await service.client.waitForCommand(id, TIMEOUT), { status: 'FAILED', error_status: 'TIMEOUT' }, "the Job's DeadlineExceeded is TIMEOUT")
  const conflict = await service.client.request('POST', `/commands/${id}/cancel`)
  t.match(conflict, { status: 409, body: { error: 'CONFLICT', message: /already ended FAILED \(TIMEOUT\)/ } })
})
