import t from 'tap'
import type { V1ContainerStatus, V1Job, V1Pod } from '@kubernetes/client-node'
import { finishedEffects } from '../../operator/finished-commands.js'
import { buildJob } from '../../operator/job-builder.js'
import { deriveStatus } from '../../operator/status.js'
import { jobConfig, storedMediaCommand } from '../operator/fixtures.js'

const now = new Date('2026-11-27T22:00:00Z')

const terminated = (name: string, exitCode: number, reason: string, message = ''): V1ContainerStatus => ({
  name, image: 'i', imageID: '', ready: false, restartCount: 0, state: { terminated: { exitCode, reason, message } },
})
const running = (name: string): V1ContainerStatus => ({ name, image: 'i', imageID: '', ready: true, restartCount: 0, state: { running: {} } })
const startError = (message = 'failed to create containerd task: ttrpc: closed') => terminated('ffmpeg', 128, 'StartError', message)

function pod(name: string, phase: string, statuses: V1ContainerStatus[], deleting = false): V1Pod {
  return {
    metadata: { name, namespace: 'ffkube', uid: `uid-${name}`, ...(deleting ? { deletionTimestamp: now } : {}) },
    status: { phase, containerStatuses: statuses },
  }
}
function job(status: V1Job['status']): V1Job {
  return { metadata: { name: 'ffkube-x', namespace: 'ffkube' }, spec: { template: {}, activeDeadlineSeconds: 1800 }, status }
}
const failedJob = job({ conditions: [{ type: 'Failed', status: 'True', reason: 'BackoffLimitExceeded' }] })

function derive(pods: V1Pod[], j: V1Job = job({ active: 1 }), phase: 'QUEUED' | 'PROCESSING' = 'QUEUED', neverStartedPods?: string[]) {
  const mc = storedMediaCommand()
  mc.status = { phase, jobName: 'ffkube-x', ...(neverStartedPods ? { neverStartedPods } : {}) }
  return deriveStatus({ mc, job: j, pods, now, imagePullGraceSeconds: 120 })
}

t.test("the Job ignores a pod whose ffmpeg container exited 128 (never started), and counts every other failure against backoffLimit 0", async (t) => {
  const spec = buildJob(storedMediaCommand(), jobConfig).spec!
  t.equal(spec.backoffLimit, 0)
  t.same(spec.podFailurePolicy, {
    rules: [{ action: 'Ignore', onExitCodes: { containerName: 'ffmpeg', operator: 'In', values: [128] } }],
  })
  t.equal(spec.template.spec!.restartPolicy, 'Never', 'a podFailurePolicy needs restartPolicy Never')
  t.ok(spec.template.spec!.containers.some((c) => c.name === 'ffmpeg'), 'the rule names a container the pod has')
})

t.test('a pod whose run container never started, while its upload container still waits, is deleted and the command keeps its phase', async (t) => {
  const stuck = pod('a', 'Running', [startError(), running('upload')])
  const d = derive([stuck])
  t.same(d.endPods.map((p) => p.metadata!.name), ['a'])
  t.equal(d.status.phase, 'PROCESSING')
  t.equal(finishedEffects({ ...storedMediaCommand(), status: d.status }, new Date()).deleteJob, false, 'nothing finished, nothing to delete')
})

t.test('a never-started pod already ending or ended is left to the kubelet and the Job', async (t) => {
  t.same(derive([pod('a', 'Running', [startError(), running('upload')], true)]).endPods, [])
  t.same(derive([pod('a', 'Failed', [startError(), terminated('upload', 143, 'Error')])]).endPods, [])
})

t.test('pods whose run container started are never deleted, whatever their exit code', async (t) => {
  for (const [code, reason] of [[1, 'Error'], [2, 'Error'], [137, 'OOMKilled'], [143, 'Error'], [0, 'Completed']] as const) {
    const d = derive([pod('a', 'Running', [terminated('ffmpeg', code, reason), running('upload')])])
    t.same(d.endPods, [], `exit ${code}`)
  }
  t.same(derive([pod('a', 'Running', [running('ffmpeg'), terminated('upload', 128, 'StartError')])]).endPods, [], 'only the run container counts')
})

t.test('between the ignored pod and the next one the command stays PROCESSING, never back to QUEUED', async (t) => {
  const gone = pod('a', 'Failed', [startError(), terminated('upload', 143, 'Error')])
  const d = derive([gone], job({ active: 0 }), 'PROCESSING')
  t.equal(d.status.phase, 'PROCESSING')
  t.equal(derive([], job({ active: 0 }), 'QUEUED').status.phase, 'QUEUED', 'a command that never ran is still QUEUED')
})

t.test('the third pod whose run container never started fails the command with the runtime\'s message and deletes the Job', async (t) => {
  const failedPods = ['a', 'b'].map((n) => pod(n, 'Failed', [startError(), terminated('upload', 143, 'Error')]))
  t.not(derive(failedPods).status.phase, 'FAILED', 'two are retried')
  const third = pod('c', 'Running', [startError('exec: "/nonexistent": no such file'), running('upload')])
  const d = derive([...failedPods, third])
  t.equal(d.status.phase, 'FAILED')
  t.equal(d.status.errorStatus, 'RUNNER_FAILED')
  t.match(d.status.errorMessage, /ffmpeg container could not be started in 3 pods \(StartError: exec: "\/nonexistent": no such file\)/)
  t.equal(finishedEffects({ ...storedMediaCommand(), status: d.status }, new Date()).deleteJob, true, 'its Job is deleted: it would make pods for ever')
  t.same(d.endPods, [], 'the Job goes with its pods')
})

t.test("a Job that failed in the pod after an ignored one names that pod's cause, not the ignored pod's exit 128 or its deletion", async (t) => {
  const ignored = pod('a', 'Failed', [startError(), terminated('upload', 143, 'Error')], true)
  const oom = pod('b', 'Failed', [terminated('ffmpeg', 137, 'OOMKilled'), terminated('upload', 1, 'Error')])
  t.match(derive([ignored, oom], failedJob).status, { phase: 'FAILED', errorStatus: 'OUT_OF_MEMORY' })
  const exited = pod('b', 'Failed', [terminated('ffmpeg', 0, 'Completed'), terminated('upload', 3, 'Error')])
  t.match(derive([ignored, exited], failedJob).status, { phase: 'FAILED', errorStatus: 'RUNNER_FAILED', errorMessage: /upload step exited with code 3/ })
})

t.test('pods whose run container never started are recorded in the status, so the ones already gone still count towards the three', async (t) => {
  const first = derive([pod('a', 'Running', [startError(), running('upload')])])
  t.same(first.status.neverStartedPods, ['uid-a'])
  t.same(derive([pod('b', 'Failed', [terminated('ffmpeg', 0, 'Completed'), terminated('upload', 0, 'Completed')])]).status.neverStartedPods, undefined, 'none recorded for a pod that ran')
  const again = derive([pod('a', 'Running', [startError(), running('upload')], true)], job({ active: 1 }), 'PROCESSING', ['uid-a'])
  t.same(again.status.neverStartedPods, ['uid-a'], 'a pod seen twice counts once')
  const third = derive([pod('c', 'Running', [startError(), running('upload')])], job({ active: 1 }), 'PROCESSING', ['uid-a', 'uid-b'])
  t.match(third.status, { phase: 'FAILED', errorStatus: 'RUNNER_FAILED', errorMessage: /could not be started in 3 pods \(StartError/ })
  t.equal(finishedEffects({ ...storedMediaCommand(), status: third.status }, new Date()).deleteJob, true)
})

t.test('a runner pod deleted while it runs fails the command POD_LOST at once: with the rule, the Job counts it only after its grace period', async (t) => {
  const deleting = pod('a', 'Running', [running('ffmpeg'), running('upload')], true)
  const d = derive([deleting], job({ active: 1 }), 'PROCESSING')
  t.match(d.status, { phase: 'FAILED', errorStatus: 'POD_LOST', errorMessage: 'the runner pod a was deleted before the command finished' })
  const evicted = { ...deleting, status: { ...deleting.status, conditions: [{ type: 'DisruptionTarget', status: 'True', reason: 'EvictionByEvictionAPI', message: 'Eviction API: evicting' }] } }
  t.match(derive([evicted], job({ active: 1 }), 'PROCESSING').status, { phase: 'FAILED', errorStatus: 'POD_EVICTED' }, 'an eviction keeps its own name')
  t.equal(derive([pod('a', 'Running', [running('ffmpeg'), running('upload')])], job({ active: 1 }), 'PROCESSING').status.phase, 'PROCESSING', 'the same pod not being deleted runs on')
})

t.test("pods the Job controller deletes at the command's deadline are its TIMEOUT, not a lost pod, even seen before the Job's own condition", async (t) => {
  const deleting = pod('a', 'Running', [running('ffmpeg'), running('upload')], true)
  const started = new Date(now.getTime() - 60_000)
  const atDeadline = job({ active: 1, startTime: started })
  atDeadline.spec!.activeDeadlineSeconds = 60
  t.equal(derive([deleting], atDeadline, 'PROCESSING').status.phase, 'PROCESSING', 'it waits for the Job to say DeadlineExceeded')
  const early = job({ active: 1, startTime: started })
  early.spec!.activeDeadlineSeconds = 600
  t.match(derive([deleting], early, 'PROCESSING').status, { phase: 'FAILED', errorStatus: 'POD_LOST' }, 'long before the deadline it is a lost pod')
})
