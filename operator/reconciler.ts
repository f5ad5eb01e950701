/**
 * Reconciles one MediaCommand, in numbered steps:
 *   1. load the MediaCommand and what its runner reported (gone or being deleted → done)
 *   2. fold the runner's reports into the status it starts from
 *   3. finished → record what the runner added late, settle it, delete it after the retention
 *   4. no Job (and not cancelled) → claim a warm one (warm-pool.ts), else build one (pure)
 *      and create it (AlreadyExists is fine)
 *   5. Job state and the runner's reports → CR status
 *   6. write the status when it changed
 *   7. pods whose run container never started → delete them (the Job makes the next)
 *   8. just finished → count it, then settle it
 * The reconciler is the CR status's only writer: it writes once per reconcile,
 * only when the status changed, conditional on the resourceVersion it read,
 * and then acknowledges the runner events that write includes. What a finished
 * command needs besides its status (its FAILED announced, a cancelled Job and
 * pods deleted, its Event) comes after the write, from the written status, and
 * again on every later reconcile until done (finished-commands.ts): an
 * operator that dies in between leaves a finished CR that says what is due.
 * A thrown error sends the key back to the queue with per-key backoff.
 */
import { isDeepStrictEqual } from 'node:util'
import type { BatchV1Api, CoreV1Api, CustomObjectsApi, V1Job, V1Pod } from '@kubernetes/client-node'
import type { Logger } from 'pino'
import { isTerminalStatus } from '../contracts/command-types.js'
import {
  LABEL_COMMAND_ID,
  MEDIA_COMMAND_GROUP,
  MEDIA_COMMAND_PLURAL,
  MEDIA_COMMAND_VERSION,
  type MediaCommand,
  type MediaCommandStatus,
} from '../contracts/media-command.js'
import { findJob, ownedBy, type Caches } from './caches.js'
import type { JobConfig } from './config.js'
import type { EventRecorder } from './events.js'
import type { FinishedCommands } from './finished-commands.js'
import { buildJob, jobNameFor } from './job-builder.js'
import { isConflict, isNotFound } from './kube-errors.js'
import type { Metrics } from './metrics.js'
import type { RunnerReport, RunnerReports } from './runner-reports.js'
import { successWaitMs, withRunnerEvents } from './runner-status.js'
import { neverStartedReason } from './run-container-start.js'
import { deriveStatus, jobFailed } from './status.js'
import type { WarmPool } from './warm-pool.js'
import { isWarmJob } from './warm-pods.js'

/**
 * After a status write lost to a newer version (a stale cache), look again this soon. The newer
 * version is on its way through the watch and enqueues the key itself; this only guarantees
 * progress should that event be lost.
 */
const STALE_RETRY_MS = 1000

export interface ReconcilerDeps {
  objects: CustomObjectsApi
  batch: BatchV1Api
  core: CoreV1Api
  caches: Caches
  job: JobConfig
  retentionSeconds: number
  imagePullGraceSeconds: number
  runnerReportGraceMs: number
  events: EventRecorder
  /** Settles finished commands: what they need besides their status. */
  finished: FinishedCommands
  /** Runner Jobs created ahead, claimed by commands that fit them. */
  warm: WarmPool
  /** Runner events not yet in a written status (runner-events.ts adds them). */
  reports: RunnerReports
  metrics: Metrics
  logger: Logger
  clock: () => Date
}

export interface Result {
  /** Reconcile again after this long (a retention or grace period running out). */
  requeueAfterMs?: number | undefined
}

/** One reconcile's view of its MediaCommand. */
interface Current {
  key: string
  /** As the cache has it: its resourceVersion is what the status write expects. */
  mc: MediaCommand
  /** The runner's events this reconcile folds in, and settles once its write succeeded. */
  reports: readonly RunnerReport[]
  /** The stored status with those events folded in. */
  status: MediaCommandStatus
  log: Logger
}

const crApi = { group: MEDIA_COMMAND_GROUP, version: MEDIA_COMMAND_VERSION, plural: MEDIA_COMMAND_PLURAL }

export class Reconciler {
  constructor(private readonly d: ReconcilerDeps) {}

  async reconcile(key: string): Promise<Result> {
    const [namespace = '', name = ''] = key.split('/')
    // 1: load the MediaCommand and what its runner reported; gone or going → nothing to do (its Job
    // goes with it by ownerReference), and nothing the runner said can ever show: settle it.
    const mc = this.d.caches.mediaCommand(namespace, name)
    const reports = this.d.reports.pending(key)
    if (!mc || mc.metadata.deletionTimestamp) {
      this.d.reports.settle(key, reports)
      this.d.finished.forget(key)
      return {}
    }
    const log = this.d.logger.child({ command_id: name, account_id: mc.spec.accountId })

    // 2: fold the runner's reports (progress, outputs, its failure reason) into the status to start from.
    const c: Current = { key, mc, reports, status: withRunnerEvents(mc.status ?? {}, reports.map((r) => r.event)), log }

    // 3: finished → record what the runner added late (its outputs may trail the Job), settle what
    // the finished status calls for (again: the process that wrote it may have died before it
    // had), then ensure cleanup.
    if (isTerminalStatus(mc.status?.phase)) {
      if (!(await this.write(c, c.status))) return { requeueAfterMs: STALE_RETRY_MS }
      await this.d.finished.settle(key, mc, log)
      return this.ensureCleanup(mc, log)
    }

    // 4: cancelled → no Job is created; one that exists is deleted with its pods (step 8).
    if (mc.spec.cancel) return this.updateStatus(c, await findJob(this.d.caches, this.d.batch, mc))

    // 4b: no Job → claim a warm one, else create one. Before any Job was recorded, a cache miss
    // goes straight to create (AlreadyExists covers a Job the cache has not seen yet), saving a
    // round trip; a warm Job this command already claimed is found by its labels first.
    const cached = this.d.caches.job(mc.metadata.namespace!, mc.status?.jobName ?? jobNameFor(mc.metadata.name))
    if (!cached && !mc.status?.jobName) {
      const claimed = this.d.warm.claimedJob(key, mc)
      if (claimed) await this.d.warm.deliver(mc, claimed, log)
      const warm = claimed ?? (await this.d.warm.claim(key, mc, log))
      if (!warm) return this.createJob(c)
      if (!claimed) this.d.metrics.countJob('claimed')
      return this.updateStatus(c, warm)
    }
    const job = cached ?? (await findJob(this.d.caches, this.d.batch, mc))
    if (job && isWarmJob(job) && ownedBy(job, mc)) await this.d.warm.deliver(mc, job, log)

    // 5-8: Job state (or its absence: deleted by hand) and the runner's reports → CR status.
    return this.updateStatus(c, job)
  }

  /** Step 3: delete the finished MediaCommand once its retention has passed; MongoDB keeps the record. */
  private async ensureCleanup(mc: MediaCommand, log: Logger): Promise<Result> {
    const finishedAt = Date.parse(mc.status?.completionTime ?? mc.metadata.creationTimestamp ?? '')
    const dueInMs = (Number.isNaN(finishedAt) ? 0 : finishedAt) + this.d.retentionSeconds * 1000 - this.d.clock().getTime()
    if (dueInMs > 0) return { requeueAfterMs: dueInMs }
    try {
      await this.d.objects.deleteNamespacedCustomObject({
        ...crApi,
        namespace: mc.metadata.namespace!,
        name: mc.metadata.name,
        // The uid precondition: never delete a newer object that reused the name. The policy goes in
        // the body too: the apiserver reads DeleteOptions from the body when there is one.
        body: { propagationPolicy: 'Background', preconditions: { uid: mc.metadata.uid } },
      })
      log.info('retention passed, deleted the finished MediaCommand')
    } catch (err) {
      if (!isNotFound(err) && !isConflict(err)) throw err
    }
    return {}
  }

  /** Step 4: build and create the Job; AlreadyExists means an earlier attempt (or replica) made it. */
  private async createJob(c: Current): Promise<Result> {
    const { mc, log } = c
    const body = buildJob(mc, this.d.job)
    let created: V1Job
    try {
      created = await this.d.batch.createNamespacedJob({ namespace: mc.metadata.namespace!, body })
    } catch (err) {
      if (!isConflict(err)) throw err
      log.debug('Job already exists')
      return this.updateStatus(c, await findJob(this.d.caches, this.d.batch, mc))
    }
    log.info({ job: created.metadata?.name }, 'created Job')
    this.d.metrics.countJob('created')
    return this.updateStatus(c, created)
  }

  /** Steps 5-8: derive the status from the Job, its pods and the runner's reports; write it when it changed; end never-started pods; settle it once finished. */
  private async updateStatus(c: Current, job: V1Job | undefined): Promise<Result> {
    const { mc, log } = c
    if (job && !ownedBy(job, mc)) {
      // A Job of an earlier MediaCommand with this name, still being garbage-collected: wait for it to go.
      log.warn({ job: job.metadata?.name }, 'Job belongs to another MediaCommand uid; waiting for its removal')
      return { requeueAfterMs: 1000 }
    }
    // 5: what the cluster and the runner show → the status.
    const pods = await this.podsOf(mc, job)
    const seen = { job, pods, now: this.d.clock(), imagePullGraceSeconds: this.d.imagePullGraceSeconds, runnerReportGraceMs: this.d.runnerReportGraceMs }
    const derived = deriveStatus({ ...seen, mc: { ...mc, status: c.status } })
    const next = derived.status
    // 5b: the runner's SUCCESS waits (unsettled) for its Job's end when nothing else changed, so the two are one write.
    const wait = isTerminalStatus(next.phase) ? undefined : successWaitMs(c.reports.map((r) => r.event), seen.now)
    if (wait !== undefined && isDeepStrictEqual(deriveStatus({ ...seen, mc }).status, mc.status ?? {})) return { requeueAfterMs: wait }
    // 6: write it; a write that lost to a newer version looks again (the newer one is on its way).
    if (!(await this.write(c, next))) return { requeueAfterMs: STALE_RETRY_MS }
    // 7: pods whose run container never started go now; the status just written counts them
    // (neverStartedPods) before they vanish, and the Job's podFailurePolicy makes the next one.
    for (const pod of derived.endPods) await this.endNeverStartedPod(mc, pod, log)
    if (!isTerminalStatus(next.phase)) return { requeueAfterMs: derived.requeueAfterMs }
    // 8: it finished in this write (a finished command never comes here): count it, then settle it.
    this.d.metrics.countJob(next.phase === 'SUCCESS' ? 'succeeded' : (next.errorStatus ?? 'failed'))
    await this.d.finished.settle(c.key, { ...mc, status: next }, log)
    return { requeueAfterMs: this.d.retentionSeconds * 1000 }
  }

  /**
   * The command's pods. For a failed Job they are read from the apiserver, not the cache:
   * FAILED is final, and the pod watch may not yet carry the OOM kill or eviction that caused it.
   */
  private async podsOf(mc: MediaCommand, job: V1Job | undefined): Promise<V1Pod[]> {
    const namespace = mc.metadata.namespace!
    if (!jobFailed(job)) return this.d.caches.podsOf(namespace, mc.metadata.name)
    const list = await this.d.core.listNamespacedPod({ namespace, labelSelector: `${LABEL_COMMAND_ID}=${mc.metadata.name}` })
    return list.items
  }

  /**
   * Its run container never started: the pod goes now, not when its upload container gives up
   * waiting, and the Job's podFailurePolicy makes the next one (run-container-start.ts). The uid
   * precondition keeps a newer pod of the same name safe.
   */
  private async endNeverStartedPod(mc: MediaCommand, pod: V1Pod, log: Logger): Promise<void> {
    try {
      await this.d.core.deleteNamespacedPod({ name: pod.metadata!.name!, namespace: pod.metadata!.namespace!, body: { preconditions: { uid: pod.metadata!.uid } } })
    } catch (err) {
      if (!isNotFound(err) && !isConflict(err)) throw err
      return
    }
    const why = neverStartedReason(pod)
    log.warn({ pod: pod.metadata?.name, why }, 'the run container never started; deleted its pod so the Job makes another')
    await this.d.events.record(mc, { reason: 'PodRetried', type: 'Warning', action: 'Retry', note: `the ffmpeg container of pod ${pod.metadata?.name} never started (${why}); the Job makes another pod` })
  }

  /**
   * Writes `next` when it differs from the stored status, then settles the
   * runner's reports it was computed with: they are in the CR now (or were
   * already). False when the write lost to a newer version of the object:
   * the reports stay pending for the next reconcile.
   */
  private async write(c: Current, next: MediaCommandStatus): Promise<boolean> {
    if (!isDeepStrictEqual(c.mc.status ?? {}, next) && !(await this.writeStatus(c.mc, next, c.log))) return false
    this.d.reports.settle(c.key, c.reports)
    return true
  }

  /** Replaces the status subresource; the object's resourceVersion makes a stale write fail (409): false then. */
  private async writeStatus(mc: MediaCommand, next: MediaCommandStatus, log: Logger): Promise<boolean> {
    try {
      await this.d.objects.replaceNamespacedCustomObjectStatus({
        ...crApi,
        namespace: mc.metadata.namespace!,
        name: mc.metadata.name,
        body: { ...mc, status: next },
      })
    } catch (err) {
      if (!isConflict(err)) throw err
      log.debug('status write lost to a newer version of the MediaCommand')
      return false
    }
    log.info({ from: mc.status?.phase, to: next.phase, error_status: next.errorStatus }, 'status changed')
    return true
  }
}

/** `namespace/name` of the MediaCommand a Job or pod belongs to, from its command-id label. */
export function ownerKey(obj: { metadata?: { namespace?: string; labels?: Record<string, string> } }): string | undefined {
  const id = obj.metadata?.labels?.[LABEL_COMMAND_ID]
  return id ? `${obj.metadata?.namespace ?? ''}/${id}` : undefined
}
