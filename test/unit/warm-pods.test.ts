import t from 'tap'
import type { V1Container, V1Job, V1Pod } from '@kubernetes/client-node'
import { commandSpecFromMediaCommand } from '../../contracts/media-command.js'
import { buildJob } from '../../operator/job-builder.js'
import {
  buildWarmJob, claimablePod, jobClaim, podClaim, podClaimed, warmTemplate, whyNotWarm, type WarmPodsConfig,
} from '../../operator/warm-pods.js'
import { commandSpec, jobConfig, storedMediaCommand } from '../operator/fixtures.js'

const pool: WarmPodsConfig = { count: 2, vcpuMillis: 2000, memoryMib: 8192, idleSeconds: 3600 }
const limits = { maxRunSeconds: 900, vcpuMillis: 2000, memoryMib: 8192 }
const fitting = () => storedMediaCommand(commandSpec({ limits }))

function byName(job: V1Job): Record<string, V1Container> {
  return Object.fromEntries(job.spec!.template.spec!.containers.map((c) => [c.name, c]))
}

function envOf(c: V1Container): Record<string, string | undefined> {
  return Object.fromEntries((c.env ?? []).map((e) => [e.name, e.value]))
}

/** A warm Job as the apiserver shows it once the Job controller started it `startedSecondsAgo` ago. */
function startedWarmJob(now: Date, startedSecondsAgo: number, name = 'ffkube-warm-0a1b2c3d'): V1Job {
  const job = buildWarmJob(name, 'ffkube', pool, jobConfig)
  job.metadata!.uid = 'job-uid'
  job.metadata!.resourceVersion = '7'
  job.status = { startTime: new Date(now.getTime() - startedSecondsAgo * 1000), active: 1 }
  return job
}

function runningPod(jobName: string, running = 2): V1Pod {
  return {
    metadata: { name: `${jobName}-x7k2p`, uid: 'pod-uid', labels: { 'batch.kubernetes.io/job-name': jobName } },
    status: {
      phase: 'Running',
      containerStatuses: ['ffmpeg', 'upload'].map((name, i) => ({
        name, image: 'runner', imageID: '', ready: i < running, restartCount: 0,
        state: i < running ? { running: { startedAt: new Date() } } : { waiting: { reason: 'ContainerCreating' } },
      })),
    },
  }
}

t.test('a warm Job is the runner Job of the pool\'s shape, owned by nobody, with no command in it', async (t) => {
  const job = buildWarmJob('ffkube-warm-0a1b2c3d', 'ffkube', pool, jobConfig)
  t.equal(job.metadata!.name, 'ffkube-warm-0a1b2c3d')
  t.equal(job.metadata!.ownerReferences, undefined, 'no MediaCommand owns it until a claim')
  t.same(job.spec!.template.metadata!.labels, { 'app.kubernetes.io/managed-by': 'ffkube-operator', 'ffkube.io/warm-pod': 'true' }, 'the operator\'s pod watch (and the runner NetworkPolicy) select its pod')
  t.same(job.metadata!.labels, { ...job.spec!.template.metadata!.labels, 'ffkube.io/warm-pod-template': warmTemplate('ffkube', pool, jobConfig) }, 'the Job says which config made it')
  t.match(job.metadata!.labels!['ffkube.io/warm-pod-template'], /^[0-9a-f]{16}$/)
  t.equal(job.spec!.activeDeadlineSeconds, 3600, 'it waits at most the idle time')
  t.equal(job.spec!.backoffLimit, 0)
  const own = buildJob(fitting(), jobConfig)
  t.same(job.spec!.podFailurePolicy, own.spec!.podFailurePolicy, 'a run container that never started is retried, as in a command\'s own Job')
  const pod = job.spec!.template.spec!
  const ownPod = own.spec!.template.spec!
  for (const field of ['securityContext', 'automountServiceAccountToken', 'enableServiceLinks', 'restartPolicy'] as const) {
    t.same(pod[field], ownPod[field], `${field} as in a command's own Job`)
  }
  const containers = byName(job)
  const ownContainers = byName(own)
  t.same(Object.keys(containers), ['ffmpeg', 'upload'])
  for (const name of ['ffmpeg', 'upload']) {
    const c = containers[name]!
    t.same(c.securityContext, ownContainers[name]!.securityContext, `${name}: locked down as before`)
    t.same(c.resources, ownContainers[name]!.resources, `${name}: the resources a fitting command's own Job would have`)
    t.same(c.command!.slice(-2), ['--await-spec', '/var/run/ffkube/claim/spec.json'], `${name}: waits for the claim file`)
    const env = envOf(c)
    t.equal(env.FFKUBE_COMMAND_SPEC, undefined, `${name}: no spec before a claim`)
    t.equal(env.FFKUBE_COMMAND_ID, undefined, `${name}: no command id before a claim`)
    t.equal(env.NATS_URL, 'nats://nats.ffkube:4222', `${name}: reports where runners report`)
    t.same(c.volumeMounts!.find((m) => m.name === 'claim'), { name: 'claim', mountPath: '/var/run/ffkube/claim', readOnly: true }, `${name}: the claim file, read-only`)
  }
  t.same(containers.ffmpeg!.resources!.limits, { cpu: '2000m', memory: '8192Mi', 'ephemeral-storage': '5Gi' }, 'the pool\'s CPU and memory limits')
  t.notOk(containers.ffmpeg!.volumeMounts!.some((m) => m.name === 'storage-credentials'), 'the ffmpeg container still mounts no credential')
  t.ok(containers.upload!.volumeMounts!.some((m) => m.name === 'storage-credentials'), 'the upload container mounts the storage Secret')
  t.same(pod.volumes!.find((v) => v.name === 'claim'), {
    name: 'claim',
    downwardAPI: { items: [{ path: 'spec.json', fieldRef: { fieldPath: "metadata.annotations['ffkube.io/command-spec']" } }], defaultMode: 0o444 },
  }, 'the kubelet writes the pod\'s own spec annotation there')
})

t.test('only a command of the pool\'s shape, with managed storage and no yt-dlp, takes a warm pod', async (t) => {
  t.equal(whyNotWarm(fitting(), pool), undefined, 'the pool\'s limits, an ffmpeg command, managed storage')
  t.match(whyNotWarm(fitting(), { ...pool, count: 0 }), /pool is off/)
  t.match(whyNotWarm(storedMediaCommand(commandSpec({ limits: { ...limits, vcpuMillis: 1000 } })), pool), /vcpuMillis \(1000\)/)
  t.match(whyNotWarm(storedMediaCommand(commandSpec({ limits: { ...limits, memoryMib: 4096 } })), pool), /memoryMib \(4096\)/)
  t.match(whyNotWarm(storedMediaCommand(commandSpec()), pool), /vcpuMillis \(none\)/, 'a command without limits is not assumed to fit')
  const ytdlp = storedMediaCommand(commandSpec({ limits, commandType: 'YTDLP_COMMAND', ytdlp: { inputUrls: { in_video: 'https://example.com/v' }, formatSelector: 'best' } as never }))
  t.match(whyNotWarm(ytdlp, pool), /cookies Secret/)
  const destination = fitting()
  destination.spec.storageDestination = { endpointUrl: 'https://s3.example.com', region: 'auto', bucket: 'b', prefix: '', pathStyle: false } as never
  t.match(whyNotWarm(destination, pool), /credentials Secret/)
  const cancelled = fitting()
  cancelled.spec.cancel = true
  t.match(whyNotWarm(cancelled, pool), /cancelled/)
  const large = fitting()
  large.spec.ffmpegCommands = [`ffmpeg -i {{in_video}} -metadata title=${'x'.repeat(130 * 1024)} {{out_thumb}}`]
  t.match(whyNotWarm(large, pool), /spec is over 131072 bytes/, 'a spec that would not fit a pod\'s annotations')
})

t.test('a warm Job is claimable through its one pod once both containers run, made from the current config, and not near its idle deadline', async (t) => {
  const now = new Date('2026-11-28T01:00:00Z')
  const template = warmTemplate('ffkube', pool, jobConfig)
  const claimable = (job: V1Job, pods: V1Pod[]) => claimablePod(job, pods, now, template)
  const job = startedWarmJob(now, 30)
  const pod = runningPod(job.metadata!.name!)
  t.equal(claimable(job, [pod]), pod)
  t.equal(claimable(job, [runningPod(job.metadata!.name!, 1)]), undefined, 'the upload container has not started')
  t.equal(claimable(job, [{ ...pod, status: { ...pod.status, phase: 'Pending' } }]), undefined, 'pending')
  t.equal(claimable(job, [{ ...pod, metadata: { ...pod.metadata, deletionTimestamp: now } }]), undefined, 'being deleted')
  t.equal(claimable(job, [pod, { ...pod, metadata: { ...pod.metadata, name: 'other', uid: 'other' } }]), undefined, 'two pods: one is on its way out')
  t.equal(claimable(job, [runningPod('ffkube-warm-other')]), undefined, 'another Job\'s pod')
  t.equal(claimable(startedWarmJob(now, 3550), [pod]), undefined, 'within a minute of its idle deadline')
  t.equal(claimable({ ...job, status: {} }, [pod]), undefined, 'not started by the Job controller yet')
  const claimed = { ...job, metadata: { ...job.metadata, labels: { ...job.metadata!.labels, 'ffkube.io/command-id': 'c1' } } }
  t.equal(claimable(claimed, [pod]), undefined, 'already claimed')
  const failed = { ...job, status: { ...job.status, conditions: [{ type: 'Failed', status: 'True' }] } }
  t.equal(claimable(failed, [pod]), undefined, 'ended')
  t.equal(claimable(buildJob(fitting(), jobConfig), [pod]), undefined, 'a command\'s own Job is never claimed')
  t.equal(claimablePod(job, [pod], now, warmTemplate('ffkube', pool, { ...jobConfig, runnerImage: 'registry.example.com/ffkube/runner:1.2.4' })), undefined, 'made before an upgrade of the runner image')
  t.not(warmTemplate('ffkube', { ...pool, memoryMib: 4096 }, jobConfig), template, 'another shape is another template')
  t.equal(warmTemplate('ffkube', { ...pool, count: 5 }, jobConfig), template, 'the pool\'s size is not part of a pod')
})

t.test('the claim gives the Job its command\'s labels, owner and deadline counted from the Job\'s start, conditional on what was read', async (t) => {
  const now = new Date('2026-11-28T01:00:00Z')
  const mc = fitting()
  mc.spec.timeLimitSeconds = 120
  const patch = jobClaim(startedWarmJob(now, 41.5), mc, jobConfig, now) as { metadata: Record<string, unknown>; spec: { activeDeadlineSeconds: number } }
  t.equal(patch.metadata.resourceVersion, '7', 'the write expects the version it chose')
  t.equal(patch.spec.activeDeadlineSeconds, 42 + 120, 'the 42 s it waited (rounded up) plus the command\'s limit')
  const own = buildJob(mc, jobConfig)
  t.same(patch.metadata.labels, own.metadata!.labels, 'the labels of the command\'s own Job')
  t.same(patch.metadata.ownerReferences, own.metadata!.ownerReferences, 'owned by the MediaCommand as its own Job is')
  t.throws(() => jobClaim({ ...startedWarmJob(now, 1), status: {} }, mc, jobConfig, now), /not started/)
})

t.test('the pod\'s claim carries the command\'s labels and its spec as the command\'s own Job gives it', async (t) => {
  const mc = fitting()
  const patch = podClaim(mc) as { metadata: { labels: Record<string, string>; annotations: Record<string, string> } }
  t.same(JSON.parse(patch.metadata.annotations['ffkube.io/command-spec']!), commandSpecFromMediaCommand(mc))
  const ownEnv = envOf(byName(buildJob(mc, jobConfig)).ffmpeg!)
  t.same(JSON.parse(patch.metadata.annotations['ffkube.io/command-spec']!), JSON.parse(ownEnv.FFKUBE_COMMAND_SPEC!), 'the same spec its own Job would put in the env')
  t.equal(patch.metadata.labels['ffkube.io/command-id'], mc.metadata.name)
  const pod = runningPod('ffkube-warm-0a1b2c3d')
  t.notOk(podClaimed(pod, mc))
  t.ok(podClaimed({ ...pod, metadata: { ...pod.metadata, ...patch.metadata } }, mc))
  t.notOk(podClaimed({ ...pod, metadata: { ...pod.metadata, ...patch.metadata } }, storedMediaCommand()), 'another command\'s claim')
})
