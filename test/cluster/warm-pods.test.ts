/**
 * Runner pods created ahead of their commands (operator/warm-pods.ts, ADR 0009)
 * on the real single-node cluster: the chart installed as the lane installs it,
 * with one warm pod. A command of the pool's shape (the Business account's
 * defaults: 2 vCPUs, 8192 MiB) claims the waiting pod; the pool makes another;
 * a command of another shape gets a Job of its own; the fault rules of a
 * command's own pod hold for a claimed one.
 */
import t from 'tap'
import { join } from 'node:path'
import type { V1Job, V1JobList, V1Pod, V1PodList } from '@kubernetes/client-node'
import { LABEL_COMMAND_ID } from '../../contracts/media-command.js'
import { eventually } from '../harness/eventually.js'
import { makeClip } from '../harness/media.js'
import { scratchDir } from '../harness/scratch.js'
import { startInputServer } from './host-servers.js'
import { installRelease, PUBLIC_IP, RUNNER_NAMESPACE } from './release.js'

// Cold start (cluster, images, helm --wait) and a few real pods: more than the suite's 300 s per file.
t.setTimeout(15 * 60_000)

const TIMEOUT = 180_000
const WARM = 'ffkube.io/warm-pod'
const release = await installRelease(t, (line) => t.comment(line), {
  values: (values) => {
    (values.runners as Record<string, unknown>).warmPods = { count: 1, vcpuMillis: 2000, memoryMib: 8192, idleSeconds: 3600 }
  },
})
const { client, kubectl, kubectlJson } = release
const dir = await scratchDir(t, 'ffkube-warm-media-')
const clip = await makeClip(join(dir, 'clip.mp4'), { seconds: 2, width: 320, height: 240 })
const inputs = await startInputServer(t, [clip], [PUBLIC_IP])
const remux = (input = inputs.url(PUBLIC_IP, clip)) => ({
  input_files: { in_video: input },
  output_files: { out_video: 'remux.mkv' },
  ffmpeg_command: 'ffmpeg -i {{in_video}} -c copy {{out_video}}',
})

interface Mc {
  metadata: { uid: string; creationTimestamp: string }
  spec: { timeLimitSeconds?: number; vcpuMillis?: number }
  status?: { phase?: string; jobName?: string; errorStatus?: string }
}

async function warmJobs(): Promise<V1Job[]> {
  return (await kubectlJson<V1JobList>(['-n', RUNNER_NAMESPACE, 'get', 'jobs', '-l', `${WARM}=true`])).items
}

async function podsWith(selector: string): Promise<V1Pod[]> {
  return (await kubectlJson<V1PodList>(['-n', RUNNER_NAMESPACE, 'get', 'pods', '-l', selector])).items
}

/** A warm Job no command claimed, whose one pod runs both containers, other than `not`. */
async function waitingWarmPod(not: string[] = []): Promise<{ job: V1Job; pod: V1Pod }> {
  return eventually('a warm runner pod waiting with both containers running', async () => {
    for (const job of await warmJobs()) {
      const name = job.metadata!.name!
      if (not.includes(name) || job.metadata?.labels?.[LABEL_COMMAND_ID] || job.metadata?.deletionTimestamp) continue
      const [pod, ...more] = await podsWith(`batch.kubernetes.io/job-name=${name}`)
      const running = pod?.status?.containerStatuses?.filter((s) => s.state?.running) ?? []
      if (pod && more.length === 0 && running.length === 2) return { job, pod }
    }
    return undefined
  }, TIMEOUT)
}

async function mediaCommand(commandId: string): Promise<Mc> {
  return kubectlJson<Mc>(['-n', RUNNER_NAMESPACE, 'get', 'mc', commandId])
}

/** The Job the MediaCommand's status names, once it names one. */
async function jobNameOf(commandId: string): Promise<string> {
  return eventually(`the MediaCommand ${commandId} to name its Job`, async () => (await mediaCommand(commandId)).status?.jobName, TIMEOUT)
}

t.test('before any command, a warm runner pod waits: both containers running, no command in it, the claim file its only way in', async (t) => {
  const { job, pod } = await waitingWarmPod()
  t.match(job.metadata!.name, /^ffkube-warm-/)
  t.equal(job.metadata!.ownerReferences, undefined, 'no MediaCommand owns it yet')
  for (const c of pod.spec!.containers) {
    const names = (c.env ?? []).map((e) => e.name)
    t.notOk(names.includes('FFKUBE_COMMAND_SPEC'), `${c.name}: no spec in the env`)
    t.same(c.command!.slice(-2), ['--await-spec', '/var/run/ffkube/claim/spec.json'], `${c.name}: waits for the claim file`)
  }
  t.equal(pod.metadata!.annotations?.['ffkube.io/command-spec'], undefined, 'no spec annotation before a claim')
  t.equal(pod.spec!.automountServiceAccountToken, false, 'no token: the runner cannot ask the apiserver for anything')
})

t.test('a command of the pool\'s shape claims the waiting pod and ends SUCCESS; the pool makes another; the claimed pod takes no second command', async (t) => {
  const waiting = await waitingWarmPod()
  const warmName = waiting.job.metadata!.name!
  const { command_id } = await client.post('/run-ffmpeg-command', remux())
  const done = await client.waitForCommand(command_id, TIMEOUT)
  t.equal(done.status, 'SUCCESS', JSON.stringify(done))
  t.equal((done.output_files as Record<string, { filename: string }>).out_video?.filename, 'remux.mkv')

  const mc = await eventually('the MediaCommand to be SUCCESS', async () => {
    const m = await mediaCommand(command_id)
    return m.status?.phase === 'SUCCESS' ? m : undefined
  }, TIMEOUT)
  t.equal(mc.status!.jobName, warmName, 'its Job is the warm one, made before the command existed')
  const [job] = (await kubectlJson<V1JobList>(['-n', RUNNER_NAMESPACE, 'get', 'jobs', '-l', `${LABEL_COMMAND_ID}=${command_id}`])).items
  t.equal(job?.metadata?.name, warmName, 'kubectl finds the command\'s Job by its label')
  t.match(job!.metadata!.ownerReferences, [{ kind: 'MediaCommand', name: command_id, uid: mc.metadata.uid, controller: true }], 'owned by the MediaCommand from the claim on')
  const waitedSeconds = Math.floor((Date.parse(mc.metadata.creationTimestamp) - new Date(job!.status!.startTime!).getTime()) / 1000)
  t.ok(waitedSeconds >= 0, 'the Job started before the command was made')
  t.ok(job!.spec!.activeDeadlineSeconds! >= mc.spec.timeLimitSeconds! + waitedSeconds, `the deadline (${job!.spec!.activeDeadlineSeconds} s) is the time it waited (≥ ${waitedSeconds} s) plus the command's limit (${mc.spec.timeLimitSeconds} s)`)
  const [pod] = await podsWith(`${LABEL_COMMAND_ID}=${command_id}`)
  t.equal(pod?.metadata?.name, waiting.pod.metadata!.name, 'the pod that was waiting ran the command')

  const next = await waitingWarmPod([warmName])
  t.not(next.job.metadata!.name, warmName, 'the pool made a new warm pod')
  const ended = await eventually('the claimed Job to complete', async () => {
    const [j] = (await kubectlJson<V1JobList>(['-n', RUNNER_NAMESPACE, 'get', 'jobs', '-l', `${LABEL_COMMAND_ID}=${command_id}`])).items
    return j?.status?.conditions?.some((c) => c.type === 'Complete' && c.status === 'True') ? j : undefined
  }, TIMEOUT)
  t.equal(ended.status!.succeeded, 1, 'its one pod ended with its one command')

  const second = await client.post('/run-ffmpeg-command', remux())
  t.equal((await client.waitForCommand(second.command_id, TIMEOUT)).status, 'SUCCESS')
  const secondMc = await mediaCommand(second.command_id)
  t.not(secondMc.status?.jobName, warmName, 'the next command went to another pod')
})

t.test('a command of another shape gets a Job of its own, as before, and leaves the warm pod waiting', async (t) => {
  const waiting = await waitingWarmPod()
  const { command_id } = await client.post('/run-ffmpeg-command', { ...remux(), vcpu_count: 1 })
  const done = await client.waitForCommand(command_id, TIMEOUT)
  t.equal(done.status, 'SUCCESS', JSON.stringify(done))
  const mc = await mediaCommand(command_id)
  t.equal(mc.spec.vcpuMillis, 1000)
  t.equal(mc.status?.jobName, `ffkube-${command_id}`, 'its own Job')
  const job = (await warmJobs()).find((j) => j.metadata!.name === waiting.job.metadata!.name)
  t.equal(job?.metadata?.labels?.[LABEL_COMMAND_ID], undefined, 'the warm Job was not claimed by it')
})

t.test('a claimed pod deleted mid-run ends its command FAILED / POD_LOST', async (t) => {
  await waitingWarmPod()
  const { command_id } = await client.post('/run-ffmpeg-command', remux(inputs.url(PUBLIC_IP, clip, 'warm-deleted')))
  await inputs.requested('warm-deleted')
  t.match(await jobNameOf(command_id), /^ffkube-warm-/, 'it runs in a claimed warm pod')
  const [pod] = await podsWith(`${LABEL_COMMAND_ID}=${command_id}`)
  await kubectl(['-n', RUNNER_NAMESPACE, 'delete', 'pod', pod!.metadata!.name!, '--wait=false'])
  const done = await client.waitForCommand(command_id, TIMEOUT)
  inputs.release('warm-deleted', 'drop')
  t.equal(done.status, 'FAILED', JSON.stringify(done))
  t.equal(done.error_status, 'POD_LOST', done.error_message)
})

t.test('a claimed pod\'s deadline counts from the claim: a command held past max_command_run_seconds ends FAILED / TIMEOUT', async (t) => {
  await waitingWarmPod()
  const { command_id } = await client.post('/run-ffmpeg-command', { ...remux(inputs.url(PUBLIC_IP, clip, 'warm-deadline')), max_command_run_seconds: 5 })
  const done = await client.waitForCommand(command_id, TIMEOUT)
  inputs.release('warm-deadline', 'drop')
  t.match(done, { status: 'FAILED', error_status: 'TIMEOUT', error_message: /time limit of 5 seconds/ }, JSON.stringify(done))
  t.match(await jobNameOf(command_id), /^ffkube-warm-/, 'it ran in a claimed warm pod')
})

t.test('a claimed pod\'s command cancelled mid-run ends FAILED / CANCELLED, its Job and pod deleted', async (t) => {
  await waitingWarmPod()
  const { command_id } = await client.post('/run-ffmpeg-command', remux(inputs.url(PUBLIC_IP, clip, 'warm-cancel')))
  await inputs.requested('warm-cancel')
  t.match(await jobNameOf(command_id), /^ffkube-warm-/, 'it runs in a claimed warm pod')
  const cancel = await client.request('POST', `/commands/${command_id}/cancel`)
  t.same(cancel, { status: 200, body: { command_id, status: 'FAILED' } })
  t.match(await client.waitForCommand(command_id, TIMEOUT), { status: 'FAILED', error_status: 'CANCELLED' })
  await eventually('the claimed Job and its pod to be gone', async () => {
    const jobs = await kubectlJson<V1JobList>(['-n', RUNNER_NAMESPACE, 'get', 'jobs', '-l', `${LABEL_COMMAND_ID}=${command_id}`])
    return jobs.items.length === 0 && (await podsWith(`${LABEL_COMMAND_ID}=${command_id}`)).length === 0
  }, TIMEOUT)
  inputs.release('warm-cancel', 'drop')
  t.pass('no Job and no pod of the command are left')
})
