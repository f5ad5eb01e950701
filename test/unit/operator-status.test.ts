import t from 'tap'
import type { V1Job, V1Pod } from '@kubernetes/client-node'
import { successWaitMs, withRunnerEvent, withRunnerEvents } from '../../operator/runner-status.js'
import { deriveStatus, formatDuration, setCondition } from '../../operator/status.js'
import { storedMediaCommand } from '../operator/fixtures.js'

const now = new Date('2026-11-21T20:10:00Z')

function job(status: V1Job['status'] = {}, deadline = 1800): V1Job {
  return { metadata: { name: 'ffkube-x', namespace: 'ffkube' }, spec: { template: {}, activeDeadlineSeconds: deadline }, status }
}
const cond = (type: string, reason = '', message = '') => ({ type, status: 'True', reason, message })
function pod(status: V1Pod['status'], created = '2026-11-21T20:09:00Z'): V1Pod {
  return { metadata: { name: 'p', creationTimestamp: created as unknown as Date }, status }
}
const terminated = (name: string, reason: string, exitCode: number) => ({ name, image: 'i', imageID: '', ready: false, restartCount: 0, state: { terminated: { reason, exitCode } } })
const waiting = (name: string, reason: string) => ({ name, image: 'i', imageID: '', ready: false, restartCount: 0, state: { waiting: { reason, message: 'pull access denied' } } })

const cases: Array<{ name: string; job: V1Job | undefined; pods?: V1Pod[]; phase: string; errorStatus?: string; requeue?: boolean }> = [
  { name: 'a Job nobody started yet is QUEUED', job: job({}), phase: 'QUEUED' },
  { name: 'an active Job is PROCESSING', job: job({ active: 1, startTime: '2026-11-21T20:05:00Z' as unknown as Date }), phase: 'PROCESSING' },
  { name: 'a Complete Job is SUCCESS', job: job({ conditions: [cond('Complete')], startTime: '2026-11-21T20:05:00Z' as unknown as Date, completionTime: '2026-11-21T20:06:05Z' as unknown as Date }), phase: 'SUCCESS' },
  { name: 'SuccessCriteriaMet counts as success', job: job({ conditions: [cond('SuccessCriteriaMet')] }), phase: 'SUCCESS' },
  { name: 'a deadline is TIMEOUT', job: job({ conditions: [cond('Failed', 'DeadlineExceeded', 'Job was active longer than specified deadline')] }), phase: 'FAILED', errorStatus: 'TIMEOUT' },
  { name: 'FailureTarget with a deadline is TIMEOUT before the pod is gone', job: job({ conditions: [cond('FailureTarget', 'DeadlineExceeded')] }), phase: 'FAILED', errorStatus: 'TIMEOUT' },
  {
    name: 'an OOM-killed step is OUT_OF_MEMORY', job: job({ conditions: [cond('Failed', 'BackoffLimitExceeded')] }),
    pods: [pod({ phase: 'Failed', initContainerStatuses: [terminated('fetch', 'Completed', 0), terminated('ffmpeg', 'OOMKilled', 137)] })],
    phase: 'FAILED', errorStatus: 'OUT_OF_MEMORY',
  },
  {
    name: 'an evicted pod is POD_EVICTED', job: job({ conditions: [cond('Failed', 'BackoffLimitExceeded')] }),
    pods: [pod({ phase: 'Failed', reason: 'Evicted', message: 'The node was low on resource: ephemeral-storage.' })],
    phase: 'FAILED', errorStatus: 'POD_EVICTED',
  },
  {
    name: 'a DisruptionTarget condition is POD_EVICTED', job: job({ conditions: [cond('Failed', 'BackoffLimitExceeded')] }),
    pods: [pod({ phase: 'Failed', conditions: [{ type: 'DisruptionTarget', status: 'True', reason: 'EvictionByEvictionAPI' }] })],
    phase: 'FAILED', errorStatus: 'POD_EVICTED',
  },
  {
    name: 'a pod deleted mid-run is POD_LOST, even once its step shows the SIGTERM exit code', job: job({ conditions: [cond('FailureTarget', 'BackoffLimitExceeded')] }),
    pods: [{ ...pod({ phase: 'Running', initContainerStatuses: [terminated('fetch', 'Error', 143)] }), metadata: { name: 'p', deletionTimestamp: now } }],
    phase: 'FAILED', errorStatus: 'POD_LOST',
  },
  { name: 'a failed Job with its pod gone is POD_LOST', job: job({ conditions: [cond('Failed', 'BackoffLimitExceeded')] }), phase: 'FAILED', errorStatus: 'POD_LOST' },
  {
    name: 'a step that exited non-zero is RUNNER_FAILED', job: job({ conditions: [cond('Failed', 'BackoffLimitExceeded')] }),
    pods: [pod({ phase: 'Failed', containerStatuses: [terminated('upload', 'Error', 3)] })],
    phase: 'FAILED', errorStatus: 'RUNNER_FAILED',
  },
  { name: 'a Job deleted by hand is JOB_DELETED', job: undefined, phase: 'FAILED', errorStatus: 'JOB_DELETED' },
  {
    name: 'an unfinished Job being deleted (waiting on finalizers) is JOB_DELETED',
    job: { ...job({ active: 1 }), metadata: { name: 'ffkube-x', deletionTimestamp: now } }, phase: 'FAILED', errorStatus: 'JOB_DELETED',
  },
  {
    name: 'a finished Job being deleted keeps its outcome',
    job: { ...job({ conditions: [cond('Complete')] }), metadata: { name: 'ffkube-x', deletionTimestamp: now } }, phase: 'SUCCESS',
  },
  {
    name: 'an image pull error inside the grace period waits', job: job({ active: 1 }),
    pods: [pod({ phase: 'Pending', initContainerStatuses: [waiting('fetch', 'ImagePullBackOff')] }, '2026-11-21T20:09:30Z')],
    phase: 'PROCESSING', requeue: true,
  },
  {
    name: 'an image pull error past the grace period is IMAGE_PULL_ERROR', job: job({ active: 1 }),
    pods: [pod({ phase: 'Pending', initContainerStatuses: [waiting('fetch', 'ErrImagePull')] }, '2026-11-21T20:05:00Z')],
    phase: 'FAILED', errorStatus: 'IMAGE_PULL_ERROR',
  },
  {
    name: 'an invalid image name fails at once', job: job({}),
    pods: [pod({ phase: 'Pending', initContainerStatuses: [waiting('fetch', 'InvalidImageName')] }, '2026-11-21T20:09:59Z')],
    phase: 'FAILED', errorStatus: 'IMAGE_PULL_ERROR',
  },
]

for (const c of cases) {
  t.test(c.name, async (t) => {
    const mc = storedMediaCommand()
    mc.status = { phase: 'QUEUED', jobName: 'ffkube-x' }
    const d = deriveStatus({ mc, job: c.job, pods: c.pods ?? [], now, imagePullGraceSeconds: 120 })
    t.equal(d.status.phase, c.phase)
    t.equal(d.status.errorStatus, c.errorStatus)
    t.equal(d.requeueAfterMs !== undefined, c.requeue ?? false)
    t.equal(d.status.observedGeneration, 1)
    t.equal(d.status.jobName, 'ffkube-x')
    if (c.phase === 'FAILED') {
      t.ok(d.status.errorMessage, 'a failure says why')
      t.ok(d.status.completionTime && d.status.duration)
      t.has(d.status.conditions!.find((x) => x.type === 'Failed'), { status: 'True', reason: c.errorStatus, observedGeneration: 1 })
    }
  })
}

t.test('a cancelled command (spec.cancel) is FAILED / CANCELLED whatever its Job shows', async (t) => {
  for (const shown of [job({}), job({ active: 1 }), job({ conditions: [cond('Complete')] }), undefined]) {
    const mc = storedMediaCommand()
    mc.spec.cancel = true
    mc.status = { phase: 'PROCESSING', jobName: 'ffkube-x' }
    const d = deriveStatus({ mc, job: shown, pods: [], now, imagePullGraceSeconds: 120 })
    t.match(d.status, { phase: 'FAILED', errorStatus: 'CANCELLED', errorMessage: /cancelled/ })
    t.has(d.status.conditions!.find((x) => x.type === 'Failed'), { status: 'True', reason: 'CANCELLED' })
  }
})

t.test('a success records start, completion, duration, progress 100 and its conditions', async (t) => {
  const mc = storedMediaCommand()
  const d = deriveStatus({
    mc, now, imagePullGraceSeconds: 120, pods: [],
    job: job({ conditions: [cond('Complete')], startTime: new Date('2026-11-21T20:05:00Z'), completionTime: new Date('2026-11-21T20:06:05Z') }),
  })
  t.equal(d.status.startTime, '2026-11-21T20:05:00.000Z')
  t.equal(d.status.completionTime, '2026-11-21T20:06:05.000Z')
  t.equal(d.status.duration, '1m5s')
  t.equal(d.status.progress, 100)
  t.same(d.status.conditions!.map((c) => [c.type, c.status]), [['JobCreated', 'True'], ['Running', 'False'], ['Complete', 'True']])
})

t.test('a warm Job that waited before the command: the start is the command\'s, and a deadline names the command\'s limit, not the Job\'s longer one', async (t) => {
  const mc = storedMediaCommand()
  mc.spec.timeLimitSeconds = 120
  // Started 20 min before the MediaCommand (20:00:01) was made; claimed with 20 min + 120 s of deadline.
  const warm = job({ conditions: [cond('Failed', 'DeadlineExceeded')], startTime: new Date('2026-11-21T19:40:01Z') }, 1320)
  const d = deriveStatus({ mc, job: warm, pods: [], now, imagePullGraceSeconds: 120 })
  t.equal(d.status.startTime, '2026-11-21T20:00:01.000Z', 'from when the command was made')
  t.equal(d.status.duration, '9m59s', 'what the command took, not what the pod waited')
  t.match(d.status, { phase: 'FAILED', errorStatus: 'TIMEOUT', errorMessage: 'the command ran longer than its time limit of 120 seconds' })
})

t.test('deriving twice from the same cluster state gives the same status (so no second write)', async (t) => {
  const mc = storedMediaCommand()
  const first = deriveStatus({ mc, job: job({ active: 1 }), pods: [], now, imagePullGraceSeconds: 120 })
  mc.status = first.status
  const later = deriveStatus({ mc, job: job({ active: 1 }), pods: [], now: new Date(now.getTime() + 60_000), imagePullGraceSeconds: 120 })
  t.same(later.status, first.status)
})

t.test("a runner pod no node can take shows the scheduler's reason on the MediaCommand, and the condition flips once a node takes it", async (t) => {
  const mc = storedMediaCommand()
  const reason = '0/1 nodes are available: 1 Insufficient memory. preemption: 0/1 nodes are available.'
  const pending = pod({ phase: 'Pending', conditions: [{ type: 'PodScheduled', status: 'False', reason: 'Unschedulable', message: reason }] })
  const waiting = deriveStatus({ mc, job: job({ active: 1 }), pods: [pending], now, imagePullGraceSeconds: 120 })
  t.has(waiting.status.conditions!.find((c) => c.type === 'PodScheduled'), { status: 'False', reason: 'Unschedulable', message: reason })
  t.notOk(waiting.status.conditions!.some((c) => c.type === 'Running'), 'not said to be running while it waits for a node')
  t.equal(waiting.status.phase === 'SUCCESS' || waiting.status.phase === 'FAILED', false, 'it waits: the Job deadline bounds it')
  mc.status = waiting.status
  const placed = pod({ phase: 'Running', conditions: [{ type: 'PodScheduled', status: 'True' }] })
  const running = deriveStatus({ mc, job: job({ active: 1 }), pods: [placed], now: new Date(now.getTime() + 60_000), imagePullGraceSeconds: 120 })
  t.has(running.status.conditions!.find((c) => c.type === 'PodScheduled'), { status: 'True', reason: 'Scheduled', lastTransitionTime: new Date(now.getTime() + 60_000).toISOString() })
  t.has(running.status.conditions!.find((c) => c.type === 'Running'), { status: 'True' })
})

t.test('a command whose pod never waited for a node carries no PodScheduled condition', async (t) => {
  const d = deriveStatus({ mc: storedMediaCommand(), job: job({ active: 1 }), pods: [pod({ phase: 'Running', conditions: [{ type: 'PodScheduled', status: 'True' }] })], now, imagePullGraceSeconds: 120 })
  t.notOk(d.status.conditions!.some((c) => c.type === 'PodScheduled'))
})

t.test('setCondition moves lastTransitionTime only when the status flips', async (t) => {
  const a = setCondition([], { type: 'Running', status: 'True', reason: 'PodRunning', message: '', observedGeneration: 1 }, new Date(1000))
  const b = setCondition(a, { type: 'Running', status: 'True', reason: 'PodRunning', message: 'still', observedGeneration: 2 }, new Date(2000))
  t.equal(b[0]!.lastTransitionTime, new Date(1000).toISOString())
  t.equal(b[0]!.observedGeneration, 2)
  const c = setCondition(b, { type: 'Running', status: 'False', reason: 'Finished', message: '', observedGeneration: 2 }, new Date(3000))
  t.equal(c[0]!.lastTransitionTime, new Date(3000).toISOString())
  t.equal(c.length, 1)
})

t.test('formats durations as kubectl does', async (t) => {
  for (const [ms, text] of [[0, '0s'], [45_000, '45s'], [192_000, '3m12s'], [3_720_000, '1h2m']] as const) t.equal(formatDuration(ms), text)
})

t.test('a failed Job waits a bounded while for the runner\'s own reason, then takes it', async (t) => {
  const failedAt = new Date(now.getTime() - 2000)
  const failedJob = job({ conditions: [{ ...cond('Failed', 'BackoffLimitExceeded'), lastTransitionTime: failedAt }] })
  const pods = [pod({ phase: 'Failed', initContainerStatuses: [terminated('fetch', 'Error', 1)] })]
  const mc = storedMediaCommand()
  mc.status = { phase: 'PROCESSING', jobName: 'ffkube-x' }
  const waiting = deriveStatus({ mc, job: failedJob, pods, now, imagePullGraceSeconds: 120, runnerReportGraceMs: 5000 })
  t.equal(waiting.status.phase, 'PROCESSING', 'not final yet')
  t.equal(waiting.requeueAfterMs, 3000, 'looks again when the grace ends')
  const late = deriveStatus({ mc, job: failedJob, pods, now: new Date(now.getTime() + 3000), imagePullGraceSeconds: 120, runnerReportGraceMs: 5000 })
  t.equal(late.status.errorStatus, 'RUNNER_FAILED', 'no event came: the generic reason')
  mc.status = { ...mc.status, runnerErrorStatus: 'INPUT_HTTP_STATUS', runnerErrorMessage: 'the input answered 404' }
  const reported = deriveStatus({ mc, job: failedJob, pods, now, imagePullGraceSeconds: 120, runnerReportGraceMs: 5000 })
  t.equal(reported.status.phase, 'FAILED')
  t.equal(reported.status.errorStatus, 'INPUT_HTTP_STATUS')
  t.equal(reported.status.errorMessage, 'the input answered 404')
  const oom = deriveStatus({
    mc, job: failedJob, now, imagePullGraceSeconds: 120, runnerReportGraceMs: 5000,
    pods: [pod({ phase: 'Failed', initContainerStatuses: [terminated('ffmpeg', 'OOMKilled', 137)] })],
  })
  t.equal(oom.status.errorStatus, 'OUT_OF_MEMORY', 'what the cluster saw beats what a killed runner said')
})

t.test('runner events add progress (forward only), outputs and the runner\'s failure reason', async (t) => {
  const base = { command_id: 'c', event_id: 'e', emitted_at: now.toISOString() }
  const processing = (progress: number | null) => ({ ...base, type: 'PROCESSING' as const, stage: 'RUNNING' as const, progress })
  t.same(withRunnerEvent({ phase: 'PROCESSING', progress: 10 }, processing(42.7)), { phase: 'PROCESSING', progress: 42 })
  const ahead = { phase: 'PROCESSING' as const, progress: 50 }
  t.equal(withRunnerEvent(ahead, processing(42)), ahead, 'never backwards')
  const started = { phase: 'PROCESSING' as const }
  t.equal(withRunnerEvent(started, processing(null)), started, 'an unknown progress changes nothing')
  const finished = { phase: 'FAILED' as const, progress: 10 }
  t.equal(withRunnerEvent(finished, processing(90)), finished, 'a finished command keeps its progress')
  const file = { filename: 'thumb.jpg', size_mbytes: 0.5 } as never
  t.same(withRunnerEvent({ phase: 'PROCESSING' }, { ...base, type: 'SUCCESS', output_files: { out_thumb: file }, ffmpeg_command_run_seconds: 1, failed_files: null }), {
    phase: 'PROCESSING', outputs: [{ alias: 'out_thumb', filename: 'thumb.jpg', sizeBytes: 524288 }], progress: 100,
  })
  const failed = { ...base, type: 'FAILED' as const, error_status: 'FFMPEG_FAILED', error_message: 'exit 1', ffmpeg_command_run_seconds: null, failed_files: null }
  t.same(withRunnerEvent({}, failed), { runnerErrorStatus: 'FFMPEG_FAILED', runnerErrorMessage: 'exit 1' })
  const reported = { runnerErrorStatus: 'FFMPEG_FAILED', runnerErrorMessage: 'exit 1' }
  t.equal(withRunnerEvent(reported, { ...failed, error_status: 'INTERNAL_ERROR' }), reported, 'the first reason stands; applied twice, changes nothing')
})

t.test('events folded in any order give the same status', async (t) => {
  const base = { command_id: 'c', emitted_at: now.toISOString() }
  const events = [
    { ...base, event_id: 'p1', type: 'PROCESSING' as const, stage: 'RUNNING' as const, progress: 30 },
    { ...base, event_id: 'p2', type: 'PROCESSING' as const, stage: 'RUNNING' as const, progress: 70 },
    { ...base, event_id: 'f', type: 'FAILED' as const, error_status: 'FFMPEG_FAILED', error_message: 'exit 1', ffmpeg_command_run_seconds: null, failed_files: null },
  ]
  const start = { phase: 'PROCESSING' as const, progress: 10 }
  const inOrder = withRunnerEvents(start, events)
  t.same(inOrder, { phase: 'PROCESSING', progress: 70, runnerErrorStatus: 'FFMPEG_FAILED', runnerErrorMessage: 'exit 1' })
  t.same(withRunnerEvents(start, [...events].reverse()), inOrder, 'reversed')
  t.same(withRunnerEvents(inOrder, events), inOrder, 'again: nothing changes')
})

t.test('a failed Job takes the runner\'s reason folded in from its event', async (t) => {
  const failedJob = job({ conditions: [{ ...cond('Failed', 'BackoffLimitExceeded'), lastTransitionTime: now }] })
  const pods = [pod({ phase: 'Failed', initContainerStatuses: [terminated('fetch', 'Error', 1)] })]
  const mc = storedMediaCommand()
  mc.status = withRunnerEvent({ phase: 'PROCESSING', jobName: 'ffkube-x', progress: 40 }, {
    command_id: 'c', event_id: 'c:FAILED', emitted_at: now.toISOString(), type: 'FAILED', error_status: 'INPUT_TIMEOUT', error_message: 'the input did not answer', ffmpeg_command_run_seconds: null, failed_files: null,
  })
  const d = deriveStatus({ mc, job: failedJob, pods, now, imagePullGraceSeconds: 120, runnerReportGraceMs: 5000 })
  t.match(d.status, { phase: 'FAILED', errorStatus: 'INPUT_TIMEOUT', errorMessage: 'the input did not answer', runnerErrorStatus: 'INPUT_TIMEOUT', progress: 40 })
})

t.test('a runner\'s SUCCESS waits for its Job\'s end only while it is young, and nothing else does', async (t) => {
  const event = (type: 'SUCCESS' | 'PROCESSING', secondsAgo: number) => ({
    command_id: 'c', event_id: `c:${type}`, emitted_at: new Date(now.getTime() - secondsAgo * 1000).toISOString(), type,
    ...(type === 'SUCCESS' ? { output_files: {}, ffmpeg_command_run_seconds: 1, failed_files: null } : { stage: 'RUNNING' as const, progress: 50 }),
  }) as never
  t.equal(successWaitMs([event('PROCESSING', 1), event('SUCCESS', 2)], now, 10_000), 8_000, 'held for what is left of the wait')
  t.equal(successWaitMs([event('SUCCESS', 10)], now, 10_000), undefined, 'a SUCCESS as old as the wait is written')
  t.equal(successWaitMs([event('PROCESSING', 0)], now, 10_000), undefined, 'progress is written as it comes')
  t.equal(successWaitMs([], now, 10_000), undefined, 'no reports, nothing to hold')
})
