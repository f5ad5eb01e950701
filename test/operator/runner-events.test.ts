import type { KubeConfig } from '@kubernetes/client-node'
import t, { type Test } from 'tap'
import { connect, JSONCodec, type NatsConnection } from 'nats'
import { KubernetesExecutor } from '../../api/executors/kubernetes-executor.js'
import { statusSubject, STATUS_STREAM, type OutputFileResult, type StatusEventBody } from '../../contracts/status-events.js'
import { runnerEventsDurable } from '../../operator/runner-events.js'
import { ensureStream, STATUS_STREAM_DEFINITION } from '../../contracts/nats-streams.js'
import type { OperatorSettings } from '../../operator/operator.js'
import { natsPublisher } from '../../operator/terminal-publisher.js'
import { envelope } from '../../runner-image/runner/report/reporter.js'
import { startKube } from '../harness/kube.js'
import { startNats } from '../harness/nats.js'
import { commandSpec } from './fixtures.js'
import { getMediaCommand, installCrd, mediaCommandIn, newNamespace, operatorRules, restrictedKubeConfig, settings, startOperator, testLogger } from './kube-setup.js'
import { eventually } from '../harness/eventually.js'
import { NodeAgent } from './node-agent.js'

const kube = await startKube(t)
const kc = kube.kubeConfig()
await installCrd(kc)
const nats = await startNats(t)
const nc = await connect({ servers: nats.url })
t.teardown(() => nc.close())
await ensureStream(nc, STATUS_STREAM_DEFINITION)
const jsm = await nc.jetstreamManager()

const codec = JSONCodec()
/** Publishes an event as a runner's reporter would (same subject, envelope and Nats-Msg-Id). */
async function report(natsConnection: NatsConnection, commandId: string, body: StatusEventBody): Promise<number> {
  const event = envelope(commandId, body, () => new Date())
  const ack = await natsConnection.jetstream().publish(statusSubject(commandId), codec.encode(event), { msgID: event.event_id })
  return ack.seq
}
const jobOf = (agent: NodeAgent, commandId: string) => agent.seen.some((job) => job.metadata?.labels?.['ffkube.io/command-id'] === commandId)
const file: OutputFileResult = {
  filename: 'thumb.jpg', storage_location: 'INTERNAL' as const, bucket: 'b', object_key: 'k', size_mbytes: 1, duration: null, width: 2, height: 2,
  bitrate_video_kb: null, bitrate_audio_kb: null, frame_rate: null, file_type: 'image', file_format: 'image2', codec: 'mjpeg', pixel_format: null, mime_type: 'image/jpeg', sample_rate: null, channels: null,
}
const success = (): StatusEventBody => ({ type: 'SUCCESS', output_files: { out_thumb: file }, ffmpeg_command_run_seconds: 0.5, failed_files: null })

/** A fresh namespace whose Jobs a node agent holds running until the test moves them. */
async function heldNamespace(t: Test, name: string): Promise<{ ns: string; agent: NodeAgent }> {
  const ns = await newNamespace(kc, name)
  const agent = new NodeAgent(kc, ns, 'hold')
  await agent.start()
  t.teardown(() => agent.stop())
  return { ns, agent }
}

/** An operator that consumes runner events from the test's NATS. */
const startWithEvents = (t: Test, config: KubeConfig, operatorSettings: OperatorSettings) =>
  startOperator(t, config, operatorSettings, { nats: nc, publisher: natsPublisher(nc, testLogger) })

t.test('runner events published while no operator runs reach the CR status when one starts again, through its durable consumer', async (t) => {
  const { ns, agent } = await heldNamespace(t, 'events-restart')
  const first = await startWithEvents(t, kc, settings(ns, { identity: 'operator-a' }))
  const spec = commandSpec()
  await new KubernetesExecutor({ kubeConfig: kc, namespace: ns }).execute(spec)
  await eventually('a Job', () => jobOf(agent, spec.commandId))
  await report(nc, spec.commandId, { type: 'PROCESSING', stage: 'RUNNING', progress: 40 })
  await eventually('progress 40 in the CR', async () => (await getMediaCommand(kc, ns, spec.commandId)).status?.progress === 40)
  const consumer = await jsm.consumers.info(STATUS_STREAM, runnerEventsDurable(ns))
  t.equal(consumer.config.ack_policy, 'explicit', 'a durable consumer with explicit acks')

  await first.stop()
  await report(nc, spec.commandId, { type: 'PROCESSING', stage: 'RUNNING', progress: 70 })
  await report(nc, spec.commandId, success())
  const second = await startWithEvents(t, kc, settings(ns, { identity: 'operator-b' }))
  await eventually('the second operator to lead', () => second.isLeader, 15_000)
  const mc = await eventually('the outputs in the CR', async () => {
    const current = await getMediaCommand(kc, ns, spec.commandId)
    return current.status?.outputs ? current : undefined
  }, 20_000)
  t.match(mc.status, { progress: 100, outputs: [{ alias: 'out_thumb', filename: 'thumb.jpg', sizeBytes: 1048576 }] })
  await eventually('every event acknowledged', async () => {
    const info = await jsm.consumers.info(STATUS_STREAM, runnerEventsDurable(ns))
    return info.num_ack_pending === 0 && info.num_pending === 0
  })
})

t.test('an event that arrives before the operator knows its MediaCommand is redelivered until it applies', async (t) => {
  const { ns } = await heldNamespace(t, 'events-early')
  const operator = await startWithEvents(t, kc, settings(ns))
  await eventually('leadership', () => operator.isLeader)
  const spec = commandSpec()
  await report(nc, spec.commandId, success())
  // Its first delivery finds no MediaCommand: the event must wait, not be dropped.
  await eventually('the event delivered once', async () => (await jsm.consumers.info(STATUS_STREAM, runnerEventsDurable(ns))).delivered.stream_seq > 0)
  await new KubernetesExecutor({ kubeConfig: kc, namespace: ns }).execute(spec)
  const mc = await eventually('the outputs in the CR', async () => {
    const current = await getMediaCommand(kc, ns, spec.commandId)
    return current.status?.outputs ? current : undefined
  }, 20_000)
  t.match(mc.status!.outputs, [{ alias: 'out_thumb' }])
  t.equal(mc.status!.progress, 100)
})

t.test('a runner\'s progress and failure reason, arriving together with the Job\'s changes, all end up in the CR status', async (t) => {
  const { ns, agent } = await heldNamespace(t, 'events-together')
  const operator = await startWithEvents(t, kc, settings(ns))
  await eventually('leadership', () => operator.isLeader)
  const spec = commandSpec()
  await new KubernetesExecutor({ kubeConfig: kc, namespace: ns }).execute(spec)
  await eventually('a Job', () => jobOf(agent, spec.commandId))

  // The pod starts as the runner reports progress: one moves the phase, the other the progress.
  await Promise.all([agent.act(spec.commandId, 'running'), report(nc, spec.commandId, { type: 'PROCESSING', stage: 'RUNNING', progress: 40 })])
  await eventually('PROCESSING with progress 40', async () => {
    const { status } = await getMediaCommand(kc, ns, spec.commandId)
    return status?.phase === 'PROCESSING' && status.progress === 40
  })

  // The runner reports why it failed as its container exits non-zero.
  const why = 'ffmpeg exited with status 1: Invalid data found when processing input'
  await Promise.all([
    report(nc, spec.commandId, { type: 'FAILED', error_status: 'FFMPEG_FAILED', error_message: why, ffmpeg_command_run_seconds: 0.2, failed_files: null }),
    agent.act(spec.commandId, 'exit-1'),
  ])
  const failed = await mediaCommandIn(kc, ns, spec.commandId, 'FAILED')
  t.match(failed.status, {
    phase: 'FAILED', errorStatus: 'FFMPEG_FAILED', errorMessage: why, runnerErrorStatus: 'FFMPEG_FAILED', runnerErrorMessage: why, progress: 40,
    jobName: `ffkube-${spec.commandId}`, startTime: String, completionTime: String,
  }, 'the Job\'s outcome, the runner\'s reason and its progress, side by side')
  t.has(failed.status!.conditions, [{ type: 'JobCreated', status: 'True' }, { type: 'Running', status: 'False' }, { type: 'Failed', status: 'True', reason: 'FFMPEG_FAILED' }])
  t.match(operator.metrics.render(), /ffkube_operator_jobs_total\{outcome="FFMPEG_FAILED"\} 1/, 'one transition to FAILED, with the runner\'s reason')
})

t.test('an event taken by an operator that stopped before writing it to the status is reflected by the next one', async (t) => {
  const { ns, agent } = await heldNamespace(t, 'events-unacked')
  // The first operator may do everything but write status: it takes the runner's event and cannot record it.
  const rules = (await operatorRules()).filter((rule) => !rule.resources?.includes('mediacommands/status'))
  const noStatus = await restrictedKubeConfig(kube, kc, ns, 'operator-without-status', rules)
  const first = await startWithEvents(t, noStatus, settings(ns, { identity: 'operator-a' }))
  await eventually('leadership', () => first.isLeader)
  const spec = commandSpec()
  await new KubernetesExecutor({ kubeConfig: kc, namespace: ns }).execute(spec)
  await eventually('a Job', () => jobOf(agent, spec.commandId))
  const seq = await report(nc, spec.commandId, success())
  await eventually('the event delivered to the first operator and held unacknowledged', async () => {
    const info = await jsm.consumers.info(STATUS_STREAM, runnerEventsDurable(ns))
    return info.delivered.stream_seq >= seq && info.ack_floor.stream_seq < seq && info.num_ack_pending > 0
  })
  t.notOk((await getMediaCommand(kc, ns, spec.commandId)).status?.outputs, 'not in the status: the first operator could not write it')

  await first.stop()
  const second = await startWithEvents(t, kc, settings(ns, { identity: 'operator-b' }))
  await eventually('the second operator to lead', () => second.isLeader, 15_000)
  const mc = await eventually('the outputs in the CR', async () => {
    const current = await getMediaCommand(kc, ns, spec.commandId)
    return current.status?.outputs ? current : undefined
  })
  t.match(mc.status, { phase: 'QUEUED', progress: 100, outputs: [{ alias: 'out_thumb', filename: 'thumb.jpg', sizeBytes: 1048576 }] })
  await eventually('the event acknowledged once the status shows it', async () => {
    const info = await jsm.consumers.info(STATUS_STREAM, runnerEventsDurable(ns))
    return info.ack_floor.stream_seq >= seq
  })
})
