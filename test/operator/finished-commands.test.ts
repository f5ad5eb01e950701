/**
 * The operator writes a finished status first and then does what it calls
 * for (publish FAILED, delete a cancelled command's Job and pods, record the
 * Event). These tests stop an operator between the write and those steps,
 * from the outside (a NATS connection it cannot publish on, a Role without
 * `delete`), and check that the next operator does them, against the test
 * kube-apiserver and a real NATS.
 */
import t from 'tap'
import { BatchV1Api, CoreV1Api, EventsV1Api } from '@kubernetes/client-node'
import { connect, JSONCodec } from 'nats'
import { KubernetesExecutor } from '../../api/executors/kubernetes-executor.js'
import { ensureStream, STATUS_STREAM_DEFINITION } from '../../contracts/nats-streams.js'
import { STATUS_STREAM, statusSubject, type StatusEvent } from '../../contracts/status-events.js'
import { jobNameFor } from '../../operator/job-builder.js'
import { natsPublisher } from '../../operator/terminal-publisher.js'
import { eventually } from '../harness/eventually.js'
import { startKube } from '../harness/kube.js'
import { startNats } from '../harness/nats.js'
import { commandSpec } from './fixtures.js'
import { installCrd, mediaCommandIn, newNamespace, operatorRules, restrictedKubeConfig, settings, startOperator, testLogger } from './kube-setup.js'
import { NodeAgent } from './node-agent.js'

const kube = await startKube(t)
const kc = kube.kubeConfig()
await installCrd(kc)
const nats = await startNats(t)
const nc = await connect({ servers: nats.url })
t.teardown(() => nc.close())
await ensureStream(nc, STATUS_STREAM_DEFINITION)
const jsm = await nc.jetstreamManager()
const batch = kc.makeApiClient(BatchV1Api)
const core = kc.makeApiClient(CoreV1Api)
const codec = JSONCodec<StatusEvent>()

const gone = (read: () => Promise<unknown>) => read().then(() => false, (err: { code?: number }) => err.code === 404)
/** The last status event the stream holds for the command; rejects when it holds none. */
const lastEvent = async (id: string) => codec.decode((await jsm.streams.getMessage(STATUS_STREAM, { last_by_subj: statusSubject(id) })).data)
/** How many status events the stream holds for the command. */
const eventsStored = async (id: string) => {
  const info = await jsm.streams.info(STATUS_STREAM, { subjects_filter: statusSubject(id) })
  return info.state.subjects?.[statusSubject(id)] ?? 0
}
const eventOf = (ns: string, id: string, reason: string) => eventually(`the ${reason} Event`, async () => {
  const list = await kc.makeApiClient(EventsV1Api).listNamespacedEvent({ namespace: ns })
  return list.items.find((e) => e.regarding?.name === id && e.reason === reason)
})

t.test('a failure written by an operator that could not publish it is published by the next operator', async (t) => {
  const ns = await newNamespace(kc, 'unpublished')
  const agent = new NodeAgent(kc, ns, 'hold')
  await agent.start()
  t.teardown(() => agent.stop())
  // The first operator's NATS connection is closed: every publish it tries fails.
  const closed = await connect({ servers: nats.url })
  await closed.close()
  const first = await startOperator(t, kc, settings(ns, { identity: 'operator-a' }), { publisher: natsPublisher(closed, testLogger) })
  await eventually('leadership', () => first.isLeader)

  const spec = commandSpec()
  await new KubernetesExecutor({ kubeConfig: kc, namespace: ns }).execute(spec)
  await eventually('its Job', () => agent.seen.some((job) => job.metadata?.labels?.['ffkube.io/command-id'] === spec.commandId))
  await agent.act(spec.commandId, 'deadline')
  const mc = await mediaCommandIn(kc, ns, spec.commandId, 'FAILED')
  t.equal(mc.status!.errorStatus, 'TIMEOUT', 'the status write landed before the publish')
  await first.stop()
  await t.rejects(lastEvent(spec.commandId), 'the stream holds nothing of the command: the first operator published nothing')

  const second = await startOperator(t, kc, settings(ns, { identity: 'operator-b' }), { publisher: natsPublisher(nc, testLogger) })
  await eventually('the second operator to lead', () => second.isLeader, 15_000)
  const event = await eventually('the FAILED event in the stream', () => lastEvent(spec.commandId).catch(() => undefined))
  t.same(event, {
    type: 'FAILED', error_status: 'TIMEOUT', error_message: mc.status!.errorMessage, ffmpeg_command_run_seconds: null, failed_files: null,
    command_id: spec.commandId, event_id: `${spec.commandId}:FAILED`, emitted_at: mc.status!.completionTime,
  }, "the runner's FAILED event, as the status says it, dated when the command finished")
  t.match(await eventOf(ns, spec.commandId, 'TimedOut'), { type: 'Warning', reportingInstance: 'operator-b', note: /^TIMEOUT: / }, 'its Event recorded too')
  t.equal(second.metrics.jobCount('TIMEOUT'), 0, 'counted where it finished, not again')
})

t.test("a cancel written by an operator that could not delete the Job is carried out by the next one, and the stream keeps one FAILED", async (t) => {
  const ns = await newNamespace(kc, 'undeleted')
  const agent = new NodeAgent(kc, ns, 'hold')
  await agent.start()
  t.teardown(() => agent.stop())
  // The first operator may do everything but delete Jobs and pods.
  const rules = (await operatorRules()).map((rule) => ({ ...rule, verbs: rule.verbs.filter((verb) => verb !== 'delete' || rule.resources?.includes('mediacommands')) }))
  const noDelete = await restrictedKubeConfig(kube, kc, ns, 'operator-without-delete', rules)
  const first = await startOperator(t, noDelete, settings(ns, { identity: 'operator-a' }), { publisher: natsPublisher(nc, testLogger) })
  await eventually('leadership', () => first.isLeader)

  const executor = new KubernetesExecutor({ kubeConfig: kc, namespace: ns })
  const spec = commandSpec()
  await executor.execute(spec)
  await eventually('its Job', () => agent.seen.some((job) => job.metadata?.labels?.['ffkube.io/command-id'] === spec.commandId))
  await agent.act(spec.commandId, 'running')
  await mediaCommandIn(kc, ns, spec.commandId, 'PROCESSING')
  await executor.cancel(spec.commandId)
  t.match((await mediaCommandIn(kc, ns, spec.commandId, 'FAILED')).status, { errorStatus: 'CANCELLED' })
  t.match(await eventually('the FAILED event in the stream', () => lastEvent(spec.commandId).catch(() => undefined)), { type: 'FAILED', error_status: 'CANCELLED' })
  await eventually('the first operator to fail deleting the Job', () => /ffkube_operator_reconcile_errors_total [1-9]/.test(first.metrics.render()))
  await first.stop()
  const jobName = jobNameFor(spec.commandId)
  const podName = `${jobName.slice(0, 56)}-pod`
  t.notOk(await gone(() => batch.readNamespacedJob({ name: jobName, namespace: ns })), 'its Job is still there')
  t.notOk(await gone(() => core.readNamespacedPod({ name: podName, namespace: ns })), 'and so is its pod')

  const second = await startOperator(t, kc, settings(ns, { identity: 'operator-b' }), { publisher: natsPublisher(nc, testLogger) })
  await eventually('the second operator to lead', () => second.isLeader, 15_000)
  await eventually('its Job to be deleted', () => gone(() => batch.readNamespacedJob({ name: jobName, namespace: ns })))
  await eventually('its pod to be deleted', () => gone(() => core.readNamespacedPod({ name: podName, namespace: ns })))
  // The second operator published again before it deleted anything; the stream dropped the copy by its Nats-Msg-Id.
  t.equal(await eventsStored(spec.commandId), 1, 'one FAILED event in the stream')
  t.match(await eventOf(ns, spec.commandId, 'Cancelled'), { type: 'Warning', reportingInstance: 'operator-b' })
})
