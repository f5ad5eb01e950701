import t from 'tap'
import type { MediaCommandStatus } from '../../contracts/media-command.js'
import { finishedEffects } from '../../operator/finished-commands.js'
import { storedMediaCommand } from '../operator/fixtures.js'

const now = new Date('2026-11-21T20:10:00Z')
const completionTime = '2026-11-21T20:06:05.000Z'

function finished(status: MediaCommandStatus) {
  const mc = storedMediaCommand()
  mc.status = { jobName: 'ffkube-x', startTime: '2026-11-21T20:05:00.000Z', completionTime, duration: '1m5s', ...status }
  return { mc, effects: finishedEffects(mc, now) }
}

t.test('a success publishes nothing, deletes nothing and records no Event', async (t) => {
  const { effects } = finished({ phase: 'SUCCESS' })
  t.equal(effects.failure, undefined)
  t.same([effects.deleteJob, effects.deletePods], [false, false])
  t.equal(effects.event, undefined, 'its conditions say it succeeded; an Event would be one more etcd write')
})

t.test('a failure is announced on the runner\'s behalf with the status\'s reason, message and completion time', async (t) => {
  const { mc, effects } = finished({ phase: 'FAILED', errorStatus: 'OUT_OF_MEMORY', errorMessage: 'the ffmpeg step ran out of memory' })
  t.same(effects.failure, { commandId: mc.metadata.name, errorStatus: 'OUT_OF_MEMORY', errorMessage: 'the ffmpeg step ran out of memory', at: new Date(completionTime) })
  t.same([effects.deleteJob, effects.deletePods], [false, false], 'a Job that failed by itself is left to its TTL')
  t.match(effects.event, { reason: 'Failed', type: 'Warning', note: 'OUT_OF_MEMORY: the ffmpeg step ran out of memory' })
})

t.test('a cancelled command has its Job and pods deleted and records Cancelled', async (t) => {
  const { effects } = finished({ phase: 'FAILED', errorStatus: 'CANCELLED', errorMessage: 'the command was cancelled by the client' })
  t.same([effects.deleteJob, effects.deletePods], [true, true])
  t.match(effects.event, { reason: 'Cancelled', action: 'Cancel', type: 'Warning' })
  t.equal(effects.failure?.errorStatus, 'CANCELLED')
})

t.test('a pod whose image cannot be pulled has its Job deleted, not its pods one by one', async (t) => {
  const { effects } = finished({ phase: 'FAILED', errorStatus: 'IMAGE_PULL_ERROR', errorMessage: 'the ffmpeg image could not be pulled (ErrImagePull)' })
  t.same([effects.deleteJob, effects.deletePods], [true, false])
  t.equal(effects.event?.reason, 'Failed')
})

t.test('a run container that never started in three pods has its Job deleted: its podFailurePolicy would retry for ever', async (t) => {
  const { effects } = finished({ phase: 'FAILED', errorStatus: 'RUNNER_FAILED', errorMessage: 'the ffmpeg container could not be started in 3 pods', neverStartedPods: ['uid-a', 'uid-b', 'uid-c'] })
  t.same([effects.deleteJob, effects.deletePods], [true, false])
  t.same(finished({ phase: 'FAILED', errorStatus: 'RUNNER_FAILED', errorMessage: 'the upload step exited with code 3', neverStartedPods: ['uid-a'] }).effects.deleteJob, false, 'a Job that failed after one retried pod is left to its TTL')
})

t.test('a time limit records TimedOut', async (t) => {
  const { effects } = finished({ phase: 'FAILED', errorStatus: 'TIMEOUT', errorMessage: 'the command ran longer than its time limit of 60 seconds' })
  t.match(effects.event, { reason: 'TimedOut', action: 'Fail' })
  t.same([effects.deleteJob, effects.deletePods], [false, false])
})

t.test('a failure without a completion time is announced as seen now', async (t) => {
  const mc = storedMediaCommand()
  mc.status = { phase: 'FAILED', errorStatus: 'JOB_DELETED', errorMessage: 'Job ffkube-x was deleted before it finished' }
  const effects = finishedEffects(mc, now)
  t.same(effects.failure?.at, now)
  t.same(effects.event?.at, now)
})
