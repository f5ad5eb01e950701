/**
 * The warm pod pool (operator/warm-pool.ts) against a real kube-apiserver, the
 * operator running with nothing but operator/rbac.yaml's rules. The harness has
 * no Job controller and no kubelet: the test plays both for the warm Job (its
 * start, its one pod with both containers running), as a node would.
 */
import t, { type Test } from 'tap'
import { BatchV1Api, CoreV1Api, PatchStrategy, setHeaderOptions, type V1Job } from '@kubernetes/client-node'
import { KubernetesExecutor } from '../../api/executors/kubernetes-executor.js'
import { commandSpecFromMediaCommand, type MediaCommand } from '../../contracts/media-command.js'
import type { Operator } from '../../operator/operator.js'
import { millicores } from '../../operator/quantities.js'
import type { WarmPodsConfig } from '../../operator/warm-pods.js'
import { eventually } from '../harness/eventually.js'
import { startKube } from '../harness/kube.js'
import { commandSpec } from './fixtures.js'
import { getMediaCommand, installCrd, newNamespace, operatorRules, restrictedKubeConfig, settings, startOperator } from './kube-setup.js'

const kube = await startKube(t)
const kc = kube.kubeConfig()
await installCrd(kc)
const batch = kc.makeApiClient(BatchV1Api)
const core = kc.makeApiClient(CoreV1Api)
const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch)
const pool: WarmPodsConfig = { count: 1, vcpuMillis: 2000, memoryMib: 8192, idleSeconds: 3600 }
const fits = { maxRunSeconds: 120, vcpuMillis: 2000, memoryMib: 8192 }

async function warmJobs(ns: string): Promise<V1Job[]> {
  return (await batch.listNamespacedJob({ namespace: ns, labelSelector: 'ffkube.io/warm-pod=true' })).items
}

/** What the Job controller and the kubelet would do for a new warm Job: started `secondsAgo`, its one pod running both containers. */
async function runWarmJob(ns: string, job: V1Job, secondsAgo: number): Promise<string> {
  const name = `${job.metadata!.name}-pod`
  await core.createNamespacedPod({
    namespace: ns,
    body: {
      metadata: { name, labels: { ...job.spec!.template.metadata!.labels }, ownerReferences: [{ apiVersion: 'batch/v1', kind: 'Job', name: job.metadata!.name!, uid: job.metadata!.uid!, controller: true }] },
      spec: job.spec!.template.spec!,
    },
  })
  const running = (c: { name: string; image?: string }) => ({ name: c.name, image: c.image!, imageID: 'sha256:0', ready: true, restartCount: 0, state: { running: { startedAt: new Date() } } })
  await core.patchNamespacedPodStatus({ name, namespace: ns, body: { status: { phase: 'Running', startTime: new Date(), containerStatuses: job.spec!.template.spec!.containers.map(running) } } }, merge)
  await batch.patchNamespacedJobStatus({ name: job.metadata!.name!, namespace: ns, body: { status: { startTime: new Date(Date.now() - secondsAgo * 1000), active: 1, ready: 1 } } }, merge)
  return name
}

async function withWarmPool(t: Test, prefix: string): Promise<{ ns: string; operator: Operator }> {
  const ns = await newNamespace(kc, prefix)
  // Pods need their service account; the harness has no controller-manager to make it.
  await core.createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name: 'default' } } })
  const asOperator = await restrictedKubeConfig(kube, kc, ns, 'ffkube-operator', await operatorRules())
  const operator = await startOperator(t, asOperator, settings(ns, { warmPods: pool }))
  await eventually('leadership', () => operator.isLeader)
  return { ns, operator }
}

/** Until the operator's caches show the warm Job started and its pod running (the watches may trail the writes). */
async function seenRunning(operator: Operator, ns: string, job: V1Job, podName: string): Promise<void> {
  await eventually('the operator to see the warm pod run', () =>
    operator.jobs.get(ns, job.metadata!.name!)?.status?.startTime !== undefined &&
    operator.pods.get(ns, podName)?.status?.containerStatuses?.every((s) => s.state?.running) === true)
}

async function jobNameOf(ns: string, id: string): Promise<{ mc: MediaCommand; jobName: string }> {
  return eventually(`${id} to name its Job`, async () => {
    const mc = await getMediaCommand(kc, ns, id)
    return mc.status?.jobName ? { mc, jobName: mc.status.jobName } : undefined
  })
}

t.test('the pool keeps one warm Job of its shape waiting, owned by nobody, with no command in it', async (t) => {
  const { ns } = await withWarmPool(t, 'warm-made')
  const [job, ...more] = await eventually('a warm Job', async () => {
    const jobs = await warmJobs(ns)
    return jobs.length > 0 ? jobs : undefined
  })
  t.same(more, [], 'one, as the pool\'s count says')
  t.match(job!.metadata!.name, /^ffkube-warm-[0-9a-f]{8}$/)
  t.equal(job!.metadata!.ownerReferences, undefined)
  t.equal(millicores(job!.spec!.template.spec!.containers[0]!.resources!.limits!.cpu!), 2000, 'the pool\'s CPU limit (the apiserver writes 2000m as 2)')
  t.notOk(job!.spec!.template.spec!.containers.some((c) => c.env?.some((e) => e.name === 'FFKUBE_COMMAND_SPEC')), 'no command in it')
})

t.test('a command of the pool\'s shape claims the running warm pod: its Job re-owned with the deadline moved, its pod handed the spec; the pool makes another', async (t) => {
  const { ns, operator } = await withWarmPool(t, 'warm-claim')
  const [warm] = await eventually('a warm Job', async () => ((await warmJobs(ns)).length > 0 ? warmJobs(ns) : undefined))
  const podName = await runWarmJob(ns, warm!, 30)
  await seenRunning(operator, ns, warm!, podName)
  const spec = commandSpec({ limits: fits })
  await new KubernetesExecutor({ kubeConfig: kc, namespace: ns }).execute(spec)
  const { mc, jobName } = await jobNameOf(ns, spec.commandId)
  t.equal(jobName, warm!.metadata!.name, 'the MediaCommand names the warm Job')
  const job = await batch.readNamespacedJob({ name: jobName, namespace: ns })
  t.equal(job.metadata!.labels!['ffkube.io/command-id'], spec.commandId)
  t.match(job.metadata!.ownerReferences, [{ kind: 'MediaCommand', name: spec.commandId, uid: mc.metadata.uid, controller: true, blockOwnerDeletion: true }])
  const deadline = job.spec!.activeDeadlineSeconds!
  t.ok(deadline >= 30 + 120 && deadline < 30 + 120 + 60, `the 30 s it waited plus the command's 120 s (${deadline})`)
  const pod = await eventually('the pod to be handed its command', async () => {
    const p = await core.readNamespacedPod({ name: podName, namespace: ns })
    return p.metadata?.annotations?.['ffkube.io/command-spec'] ? p : undefined
  })
  t.same(JSON.parse(pod.metadata!.annotations!['ffkube.io/command-spec']!), commandSpecFromMediaCommand(mc), 'the spec its own Job would have carried')
  t.equal(pod.metadata!.labels!['ffkube.io/command-id'], spec.commandId, 'kubectl finds the pod by the command\'s label')
  await t.rejects(batch.readNamespacedJob({ name: `ffkube-${spec.commandId}`, namespace: ns }), 'no Job of its own was made')
  const next = await eventually('another warm Job', async () =>
    (await warmJobs(ns)).find((j) => j.metadata!.name !== jobName && !j.metadata!.labels!['ffkube.io/command-id']))
  t.ok(next, `the pool made ${next.metadata!.name}`)
})

t.test('a command of another shape, or one that comes while no warm pod runs, gets a Job of its own', async (t) => {
  const { ns, operator } = await withWarmPool(t, 'warm-other')
  const [warm] = await eventually('a warm Job', async () => ((await warmJobs(ns)).length > 0 ? warmJobs(ns) : undefined))
  const early = commandSpec({ limits: fits })
  await new KubernetesExecutor({ kubeConfig: kc, namespace: ns }).execute(early)
  t.equal((await jobNameOf(ns, early.commandId)).jobName, `ffkube-${early.commandId}`, 'its pod is not running yet: not claimable')
  await seenRunning(operator, ns, warm!, await runWarmJob(ns, warm!, 5))
  const other = commandSpec({ limits: { ...fits, vcpuMillis: 1000 } })
  await new KubernetesExecutor({ kubeConfig: kc, namespace: ns }).execute(other)
  t.equal((await jobNameOf(ns, other.commandId)).jobName, `ffkube-${other.commandId}`, 'another CPU limit: its own Job')
  const still = await batch.readNamespacedJob({ name: warm!.metadata!.name!, namespace: ns })
  t.equal(still.metadata!.labels!['ffkube.io/command-id'], undefined, 'the warm Job still waits')
})

t.test('commands that come together never claim one warm Job twice', async (t) => {
  const { ns, operator } = await withWarmPool(t, 'warm-race')
  const [warm] = await eventually('a warm Job', async () => ((await warmJobs(ns)).length > 0 ? warmJobs(ns) : undefined))
  await seenRunning(operator, ns, warm!, await runWarmJob(ns, warm!, 5))
  const specs = Array.from({ length: 6 }, () => commandSpec({ limits: fits }))
  await Promise.all(specs.map((spec) => new KubernetesExecutor({ kubeConfig: kc, namespace: ns }).execute(spec)))
  const names = await Promise.all(specs.map(async (spec) => (await jobNameOf(ns, spec.commandId)).jobName))
  const claimers = specs.filter((_, i) => names[i] === warm!.metadata!.name)
  t.equal(claimers.length, 1, 'one command, and only one, names the warm Job')
  for (const [i, spec] of specs.entries()) {
    if (names[i] !== warm!.metadata!.name) t.equal(names[i], `ffkube-${spec.commandId}`, 'the others have Jobs of their own')
  }
  const job = await batch.readNamespacedJob({ name: warm!.metadata!.name!, namespace: ns })
  const owner = job.metadata!.labels!['ffkube.io/command-id']
  t.equal(owner, claimers[0]?.commandId, 'the Job\'s label names that command')
})
