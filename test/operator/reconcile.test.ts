import t from 'tap'
import { BatchV1Api, CoreV1Api, CustomObjectsApi, EventsV1Api, type KubeConfig } from '@kubernetes/client-node'
import { connect, JSONCodec } from 'nats'
import { KubernetesExecutor } from '../../api/executors/kubernetes-executor.js'
import type { MediaCommand } from '../../contracts/media-command.js'
import { statusSubject, type FailedEvent } from '../../contracts/status-events.js'
import { buildJob } from '../../operator/job-builder.js'
import { natsPublisher } from '../../operator/terminal-publisher.js'
import { startKube } from '../harness/kube.js'
import { startNats } from '../harness/nats.js'
import { commandSpec, jobConfig } from './fixtures.js'
import { cr, getMediaCommand, getTable, installCrd, newNamespace, operatorRules, restrictedKubeConfig, settings, startOperator, testLogger } from './kube-setup.js'
import { eventually } from '../harness/eventually.js'
import { NodeAgent, type Outcome } from './node-agent.js'

const kube = await startKube(t)
const kc = kube.kubeConfig()
await installCrd(kc)
const batch = kc.makeApiClient(BatchV1Api)
const objects = kc.makeApiClient(CustomObjectsApi)

async function phaseOf(kc: KubeConfig, ns: string, id: string, phase: string): Promise<MediaCommand> {
  return eventually(`${id} to be ${phase}`, async () => {
    const mc = await getMediaCommand(kc, ns, id)
    return mc.status?.phase === phase ? mc : undefined
  })
}

async function eventsOf(ns: string, id: string): Promise<string[]> {
  const list = await kc.makeApiClient(EventsV1Api).listNamespacedEvent({ namespace: ns })
  return list.items.filter((e) => e.regarding?.name === id).map((e) => e.reason!).sort()
}

t.test('a MediaCommand becomes a locked-down Job, and a complete Job makes it SUCCESS', async (t) => {
  const ns = await newNamespace(kc, 'happy')
  const agent = new NodeAgent(kc, ns, 'hold')
  await agent.start()
  t.teardown(() => agent.stop())
  const operator = await startOperator(t, kc, settings(ns))
  await eventually('leadership', () => operator.isLeader)

  const spec = commandSpec()
  await new KubernetesExecutor({ kubeConfig: kc, namespace: ns }).execute(spec)
  const job = await eventually('the Job', () => batch.readNamespacedJob({ name: `ffkube-${spec.commandId}`, namespace: ns }))
  const mc = await phaseOf(kc, ns, spec.commandId, 'QUEUED')
  t.equal(mc.status!.jobName, `ffkube-${spec.commandId}`)
  t.has(mc.status!.conditions, [{ type: 'JobCreated', status: 'True', observedGeneration: 1 }])

  // The stored Job carries exactly what the pure builder made: the apiserver dropped no security field.
  const expected = buildJob(mc, jobConfig)
  t.equal(job.spec!.backoffLimit, 0)
  t.equal(job.spec!.activeDeadlineSeconds, 1800)
  t.equal(job.spec!.ttlSecondsAfterFinished, 600)
  const pod = job.spec!.template.spec!
  t.equal(pod.automountServiceAccountToken, false)
  t.equal(pod.enableServiceLinks, false)
  t.equal(pod.restartPolicy, 'Never')
  t.same(pod.securityContext, expected.spec!.template.spec!.securityContext)
  t.same(pod.volumes, expected.spec!.template.spec!.volumes, 'the work directory, the upload scratch directory and the storage Secret, as built')
  t.equal(pod.volumes!.length, 3)
  t.equal(pod.initContainers, undefined)
  t.same(pod.containers.map((c) => c.name), ['ffmpeg', 'upload'])
  for (const [i, c] of pod.containers.entries()) {
    const want = expected.spec!.template.spec!.containers[i]!
    t.same(c.securityContext, want.securityContext, `${c.name}: security context as built`)
    t.same(c.resources, want.resources, `${c.name}: resources as built`)
    t.same(c.volumeMounts, want.volumeMounts, `${c.name}: the Secret mounted only where built`)
    t.same(c.command, want.command, `${c.name}: runner phase`)
  }
  t.same(job.metadata!.ownerReferences!.map((r) => [r.kind, r.name, r.uid, r.controller]), [['MediaCommand', spec.commandId, mc.metadata.uid, true]])

  await agent.act(spec.commandId, 'running')
  const running = await phaseOf(kc, ns, spec.commandId, 'PROCESSING')
  t.ok(running.status!.startTime)
  await agent.act(spec.commandId, 'complete')
  const done = await phaseOf(kc, ns, spec.commandId, 'SUCCESS')
  t.equal(done.status!.progress, 100)
  t.ok(done.status!.completionTime)
  t.match(done.status!.duration, /^\d+s$/)
  t.has(done.status!.conditions, [{ type: 'JobCreated' }, { type: 'Running', status: 'False' }, { type: 'Complete', status: 'True' }])

  // More reconciles of an unchanged command (a label change enqueues it) record nothing new.
  const reconciles = () => Number(/reconcile_duration_seconds_count (\d+)/.exec(operator.metrics.render())![1])
  const before = reconciles()
  await objects.patchNamespacedCustomObject(
    { ...cr, namespace: ns, name: spec.commandId, body: { metadata: { labels: { touched: 'yes' } } } },
    (await import('@kubernetes/client-node')).setHeaderOptions('Content-Type', (await import('@kubernetes/client-node')).PatchStrategy.MergePatch),
  )
  await eventually('the label change to be reconciled', () => reconciles() > before)
  t.same(await eventsOf(ns, spec.commandId), [], 'a success records no Event (its conditions say it)')
  const after = await getMediaCommand(kc, ns, spec.commandId)
  t.same(after.status, done.status, 'an unchanged state writes no status')

  const table = await getTable(kube, `/apis/ffkube.io/v1alpha1/namespaces/${ns}/mediacommands`)
  t.same(table.columnDefinitions.map((c) => [c.name, c.priority]), [
    ['Name', 0], ['Type', 0], ['Status', 0], ['Progress', 0], ['Age', 0], ['Duration', 0], ['Account', 1], ['Error', 1], ['Cancel', 0], ['Limit', 1], ['mCPU', 1],
  ], 'kubectl get mc columns; Account, Error and the limits only with -o wide')
  t.match(table.rows[0]!.cells, [spec.commandId, 'FFMPEG_COMMAND', 'SUCCESS', 100, String, /^\d+s$/, spec.accountId, undefined])
  t.match(operator.metrics.render(), /ffkube_operator_jobs_total\{outcome="succeeded"\} 1/)
  t.same(agent.errors, [])
})

t.test('every failure mode ends FAILED with its reason, one Failed event, and one terminal NATS event', async (t) => {
  const ns = await newNamespace(kc, 'failures')
  const nats = await startNats(t)
  const nc = await connect({ servers: nats.url })
  t.teardown(() => nc.close())
  const jsm = await nc.jetstreamManager()

  const agent = new NodeAgent(kc, ns, 'hold')
  await agent.start()
  t.teardown(() => agent.stop())
  const operator = await startOperator(t, kc, settings(ns), { publisher: natsPublisher(nc, testLogger) })
  await eventually('leadership', () => operator.isLeader)
  const executor = new KubernetesExecutor({ kubeConfig: kc, namespace: ns })

  const cases: Array<[Outcome | 'job-deleted', string]> = [
    ['deadline', 'TIMEOUT'], ['oom', 'OUT_OF_MEMORY'], ['evicted', 'POD_EVICTED'], ['pod-lost', 'POD_LOST'],
    ['image-pull', 'IMAGE_PULL_ERROR'], ['exit-1', 'RUNNER_FAILED'], ['job-deleted', 'JOB_DELETED'],
  ]
  const ids = new Map<string, string>()
  for (const [outcome] of cases) {
    const spec = commandSpec()
    ids.set(outcome, spec.commandId)
    agent.expect(spec.commandId, outcome === 'job-deleted' ? 'hold' : outcome)
    await executor.execute(spec)
  }
  // A stream on exactly these commands' subjects, so a shared NATS (NATS_URL) is not disturbed.
  const stream = `OPERATOR_TEST_${process.pid}_${Date.now()}`
  await jsm.streams.add({ name: stream, subjects: [...ids.values()].map(statusSubject) })
  t.teardown(() => jsm.streams.delete(stream))
  const jobDeleted = ids.get('job-deleted')!
  await phaseOf(kc, ns, jobDeleted, 'QUEUED')
  await batch.deleteNamespacedJob({ name: `ffkube-${jobDeleted}`, namespace: ns })

  for (const [outcome, errorStatus] of cases) {
    const id = ids.get(outcome)!
    const mc = await phaseOf(kc, ns, id, 'FAILED')
    t.equal(mc.status!.errorStatus, errorStatus, `${outcome} → ${errorStatus}`)
    t.ok(mc.status!.errorMessage, `${outcome}: says why (${mc.status!.errorMessage})`)
    t.has(mc.status!.conditions, [{ type: 'JobCreated' }, { type: 'Running' }, { type: 'Failed', status: 'True', reason: errorStatus }])
    // A time limit has its own reason (TimedOut); every other failure here is Failed.
    const reason = errorStatus === 'TIMEOUT' ? 'TimedOut' : 'Failed'
    t.same(await eventually(`${outcome}'s events`, async () => {
      const reasons = await eventsOf(ns, id)
      return reasons.includes(reason) ? reasons : undefined
    }), [reason], `${outcome}: one ${reason} event`)
  }
  await eventually('the image-pull Job to be deleted', () =>
    batch.readNamespacedJob({ name: `ffkube-${ids.get('image-pull')}`, namespace: ns }).then(() => false, (err: { code?: number }) => err.code === 404))
  t.equal(agent.seen.length, cases.length, 'one Job per command: none was recreated')

  const info = await jsm.streams.info(stream)
  t.equal(info.state.messages, cases.length, 'one terminal event per failed command')
  const codec = JSONCodec<FailedEvent>()
  const timeout = await jsm.streams.getMessage(stream, { last_by_subj: statusSubject(ids.get('deadline')!) })
  t.match(codec.decode(timeout.data), {
    type: 'FAILED', command_id: ids.get('deadline'), event_id: `${ids.get('deadline')}:FAILED`, error_status: 'TIMEOUT', error_message: /time limit/, emitted_at: String,
  }, 'the runner\'s FAILED event shape, with the runner\'s Nats-Msg-Id')
  t.equal(timeout.header?.get('Nats-Msg-Id'), `${ids.get('deadline')}:FAILED`)
  t.same(agent.errors, [])
})

t.test('a pod whose ffmpeg container never started is deleted at once, the command stays PROCESSING, and the next pod takes it to SUCCESS', async (t) => {
  const ns = await newNamespace(kc, 'never-started')
  const agent = new NodeAgent(kc, ns, 'hold')
  await agent.start()
  t.teardown(() => agent.stop())
  const operator = await startOperator(t, kc, settings(ns))
  await eventually('leadership', () => operator.isLeader)
  const core = kc.makeApiClient(CoreV1Api)

  const spec = commandSpec()
  agent.expect(spec.commandId, 'start-error')
  await new KubernetesExecutor({ kubeConfig: kc, namespace: ns }).execute(spec)
  // The harness has no kubelet and no Job controller: the operator's delete removes the pod at once.
  const reasons = await eventually('the operator to delete the pod and say so', async () => {
    const pods = await core.listNamespacedPod({ namespace: ns })
    const recorded = await eventsOf(ns, spec.commandId)
    return pods.items.length === 0 && recorded.includes('PodRetried') ? recorded : undefined
  })
  t.same(reasons, ['PodRetried'])
  const events = await kc.makeApiClient(EventsV1Api).listNamespacedEvent({ namespace: ns })
  t.match(events.items.find((e) => e.reason === 'PodRetried')?.note, /ffmpeg container of pod .* never started \(StartError: failed to create containerd task: ttrpc: closed\)/)
  t.equal((await getMediaCommand(kc, ns, spec.commandId)).status!.phase, 'PROCESSING', 'the command is still running: the Job makes another pod')

  // The Job controller's next pod, which runs.
  await agent.act(spec.commandId, 'complete')
  const mc = await phaseOf(kc, ns, spec.commandId, 'SUCCESS')
  t.notOk(mc.status!.errorStatus)
  t.same(agent.errors, [])
})

t.test('the Kubernetes executor creates the MediaCommand once, however often it is called', async (t) => {
  const ns = await newNamespace(kc, 'executor')
  const executor = new KubernetesExecutor({ kubeConfig: kc, namespace: ns })
  const spec = commandSpec({ commandType: 'YTDLP_COMMAND', ffmpegCommands: [], inputFiles: {}, outputFiles: {}, ytdlp: { inputUrls: { in_clip: 'https://video.example.com/watch?v=1' }, formatSelector: '720p' } })
  await executor.execute(spec)
  await executor.execute(spec)
  await Promise.all([executor.execute(spec), executor.execute(spec)])
  const list = (await objects.listNamespacedCustomObject({ ...cr, namespace: ns })) as { items: MediaCommand[] }
  t.equal(list.items.length, 1)
  const mc = list.items[0]!
  t.equal(mc.metadata.name, spec.commandId)
  t.same(mc.metadata.labels, { 'ffkube.io/account-id': spec.accountId, 'ffkube.io/command-type': 'YTDLP_COMMAND', 'ffkube.io/command-id': spec.commandId })
  t.same(mc.spec.ytdlp, { inputUrls: { in_clip: 'https://video.example.com/watch?v=1' }, formatSelector: '720p' })
})

t.test('the CRD refuses what the API would refuse', async (t) => {
  const ns = await newNamespace(kc, 'schema')
  const create = (spec: Record<string, unknown>) => objects.createNamespacedCustomObject({
    ...cr, namespace: ns,
    body: { apiVersion: 'ffkube.io/v1alpha1', kind: 'MediaCommand', metadata: { name: commandSpec().commandId }, spec: { accountId: 'acc_1', commandType: 'FFMPEG_COMMAND', ...spec } },
  })
  await t.rejects(create({ inputFiles: { video: 'https://x/a' } }), { code: 422 }, 'an input alias without in_')
  await t.rejects(create({ outputFiles: { out_a: '../etc/passwd' } }), { code: 422 }, 'an output filename with a slash')
  await t.rejects(create({ inputFiles: { in_a: 'file:///etc/passwd' } }), { code: 422 }, 'a non-http input')
  await t.rejects(create({ ffmpegCommands: ['a', 'b'] }), { code: 422 }, 'two commands for FFMPEG_COMMAND')
  await t.rejects(create({ commandType: 'YTDLP_COMMAND' }), { code: 422 }, 'YTDLP_COMMAND without ytdlp')
  await t.rejects(create({ storageDestinationId: 'sd_nothex' }), { code: 422 }, 'a malformed destination id')
  const ok = await create({ ffmpegCommands: ['ffmpeg -i {{in_a}} {{out_b}}'], inputFiles: { in_a: 'https://x/a' }, outputFiles: { out_b: 'b.mp4' } })
  await t.rejects(objects.patchNamespacedCustomObject(
    { ...cr, namespace: ns, name: ok.metadata.name, body: { spec: { accountId: 'acc_2' } } },
    (await import('@kubernetes/client-node')).setHeaderOptions('Content-Type', (await import('@kubernetes/client-node')).PatchStrategy.MergePatch),
  ), { code: 422 }, 'the spec is immutable')
})

t.test('the operator works with nothing but the rules of operator/rbac.yaml', async (t) => {
  const ns = await newNamespace(kc, 'rbac')
  const restricted = await restrictedKubeConfig(kube, kc, ns, 'ffkube-operator', await operatorRules())
  await t.rejects(restricted.makeApiClient(CoreV1Api).listNamespacedSecret({ namespace: ns }), { code: 403 }, 'the token is really restricted: no Secrets')

  const agent = new NodeAgent(kc, ns, 'complete')
  await agent.start()
  t.teardown(() => agent.stop())
  const operator = await startOperator(t, restricted, settings(ns, { retentionSeconds: 2 }))
  await eventually('leadership', () => operator.isLeader)
  const executor = new KubernetesExecutor({ kubeConfig: kc, namespace: ns })
  const ok = commandSpec()
  const pull = commandSpec()
  agent.expect(pull.commandId, 'image-pull')
  await executor.execute(ok)
  await executor.execute(pull)
  await phaseOf(kc, ns, ok.commandId, 'SUCCESS')
  await phaseOf(kc, ns, pull.commandId, 'FAILED')
  await eventually('the image-pull Job to be deleted', () =>
    batch.readNamespacedJob({ name: `ffkube-${pull.commandId}`, namespace: ns }).then(() => false, (err: { code?: number }) => err.code === 404))
  t.same(await eventsOf(ns, ok.commandId), [], 'the success recorded no Event')
  await eventually('retention to delete both', async () =>
    ((await objects.listNamespacedCustomObject({ ...cr, namespace: ns })) as { items: unknown[] }).items.length === 0, 8000)
  t.match(operator.metrics.render(), /ffkube_operator_reconcile_errors_total 0/, 'no call was forbidden')
})
