/**
 * Keeps `count` warm runner Jobs waiting and hands them to commands
 * (warm-pods.ts says what a warm Job is and how a claim is written).
 *
 * Only the leader acts. The pool is level-triggered: every event of a warm
 * Job or pod, every claim and the start of leadership call fill(), which
 * counts the unclaimed, unfinished warm Jobs in the cache (plus those it
 * created that the cache has not shown yet) and creates the difference.
 * Unclaimed warm Jobs that ended (their idle deadline, a pod that failed) or
 * were made from another config (an upgrade) are deleted; claimed ones
 * belong to their MediaCommand from then on.
 *
 * This process remembers its own claims until its cache shows them, so a
 * reconcile that runs before the watch caught up finds the Job it claimed
 * rather than claiming a second or creating a Job of its own. A new leader
 * finds earlier claims by their labels.
 */
import { randomBytes } from 'node:crypto'
import { PatchStrategy, setHeaderOptions, type BatchV1Api, type CoreV1Api, type V1Job, type V1Pod } from '@kubernetes/client-node'
import type { Logger } from 'pino'
import type { MediaCommand } from '../contracts/media-command.js'
import { ownedBy } from './caches.js'
import type { JobConfig } from './config.js'
import { describeError, isConflict, isNotFound } from './kube-errors.js'
import { podsToEnd } from './run-container-start.js'
import {
  buildWarmJob, claimablePod, claimedFor, isWarmJob, jobClaim, jobFinished, LABEL_JOB_NAME, LABEL_WARM_TEMPLATE, podClaim, podClaimed, SPEC_ANNOTATION, warmJobName, warmTemplate, whyNotWarm, type WarmPodsConfig,
} from './warm-pods.js'

const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch)
/** A create or claim the cache has not shown after this long is not waited for any more (it may have been deleted at once). */
const CREATED_UNSEEN_MS = 60_000
/** After a refill failed (the apiserver unreachable, a quota), the next try. */
const REFILL_RETRY_MS = 5_000

export interface WarmPoolDeps {
  batch: BatchV1Api
  core: CoreV1Api
  namespace: string
  job: JobConfig
  pool: WarmPodsConfig
  /** The Job and pod informers' caches (our labels only). */
  jobs: () => V1Job[]
  pods: () => V1Pod[]
  /** Whether this replica may act (holds the Lease). */
  leading: () => boolean
  logger: Logger
  clock: () => Date
}

export class WarmPool {
  /** Warm Jobs this process claimed, by MediaCommand key, as the claim's answer showed them, until the cache shows the claim. */
  private readonly claims = new Map<string, { job: V1Job; at: number }>()
  /** uids of pods this process handed a command, until the cache shows it. */
  private readonly handed = new Set<string>()
  /** Warm Jobs created and not yet seen in the cache, with when. */
  private readonly created = new Map<string, number>()
  private filling: Promise<void> | undefined
  private fillAgain = false

  /** The template label of the warm Jobs this config makes: others are never claimed, and are replaced. */
  private readonly template: string

  constructor(private readonly d: WarmPoolDeps) {
    this.template = warmTemplate(d.namespace, d.pool, d.job)
  }

  get enabled(): boolean {
    return this.d.pool.count > 0
  }

  /** The warm Job already claimed for `mc`, if any. */
  claimedJob(key: string, mc: MediaCommand): V1Job | undefined {
    const cached = this.d.jobs().find((job) => isWarmJob(job) && claimedFor(job) === mc.metadata.name && ownedBy(job, mc))
    if (cached) {
      this.claims.delete(key)
      return cached
    }
    const mine = this.claims.get(key)?.job
    return mine && ownedBy(mine, mc) ? mine : undefined
  }

  /** Forgets claims the cache shows (or that it lost track of long ago): from then on the labels say it. */
  private prune(): void {
    const cached = new Map(this.d.jobs().map((job) => [job.metadata?.name, job]))
    const now = this.d.clock().getTime()
    for (const [key, { job, at }] of this.claims) {
      const seen = cached.get(job.metadata?.name)
      if ((seen && claimedFor(seen) !== undefined) || now - at > CREATED_UNSEEN_MS) this.claims.delete(key)
    }
    const unclaimedPods = new Set(this.d.pods().filter((pod) => pod.metadata?.annotations?.[SPEC_ANNOTATION] === undefined).map((pod) => pod.metadata?.uid))
    for (const uid of this.handed) if (!unclaimedPods.has(uid)) this.handed.delete(uid)
  }

  /**
   * Claims a waiting warm Job for `mc` and hands its pod the command;
   * undefined when `mc` does not fit the pool or no warm pod is ready (the
   * caller then creates the command's own Job).
   */
  async claim(key: string, mc: MediaCommand, log: Logger): Promise<V1Job | undefined> {
    if (!this.enabled) return undefined
    const why = whyNotWarm(mc, this.d.pool)
    if (why !== undefined) {
      log.debug({ why }, 'not a command for a warm pod')
      return undefined
    }
    this.prune()
    const now = this.d.clock()
    const pods = this.d.pods()
    const inFlight = new Set([...this.claims.values()].map(({ job }) => job.metadata?.name))
    for (const job of this.d.jobs()) {
      if (inFlight.has(job.metadata?.name)) continue
      const pod = claimablePod(job, pods, now, this.template)
      if (!pod) continue
      let claimed: V1Job
      try {
        claimed = await this.d.batch.patchNamespacedJob({ name: job.metadata!.name!, namespace: this.d.namespace, body: jobClaim(job, mc, this.d.job, now) }, merge)
      } catch (err) {
        // Another claim (or the Job controller) wrote it first, or it is gone: try the next.
        if (isConflict(err) || isNotFound(err)) continue
        throw err
      }
      this.claims.set(key, { job: claimed, at: now.getTime() })
      log.info({ job: job.metadata?.name, pod: pod.metadata?.name }, 'claimed a warm runner pod')
      await this.handOver(mc, pod, log)
      this.fill()
      return claimed
    }
    log.info('no warm runner pod ready: the command gets a Job of its own')
    this.fill()
    return undefined
  }

  /**
   * Every live pod of the claimed `job` carries `mc`'s claim: after a crash
   * between the claim's two writes, or a pod the Job made anew (a run
   * container that never started), the next reconcile writes it.
   */
  async deliver(mc: MediaCommand, job: V1Job, log: Logger): Promise<void> {
    for (const pod of this.d.pods()) {
      if (pod.metadata?.labels?.[LABEL_JOB_NAME] !== job.metadata?.name || pod.metadata?.deletionTimestamp) continue
      if (pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed') continue
      if (podClaimed(pod, mc)) {
        this.handed.delete(pod.metadata!.uid!)
        continue
      }
      if (!this.handed.has(pod.metadata!.uid!)) await this.handOver(mc, pod, log)
    }
  }

  private async handOver(mc: MediaCommand, pod: V1Pod, log: Logger): Promise<void> {
    try {
      await this.d.core.patchNamespacedPod({ name: pod.metadata!.name!, namespace: this.d.namespace, body: podClaim(mc) }, merge)
      this.handed.add(pod.metadata!.uid!)
    } catch (err) {
      // A pod gone since: its Job fails or makes another, which the next reconcile sees.
      if (!isNotFound(err)) throw err
      log.warn({ pod: pod.metadata?.name }, 'the claimed warm pod is gone')
    }
  }

  /** Brings the pool back to its size; calls while one runs make it run once more after. */
  fill(): void {
    if (!this.enabled || !this.d.leading()) return
    if (this.filling) {
      this.fillAgain = true
      return
    }
    this.filling = this.refill()
      .catch((err: unknown) => {
        this.d.logger.warn({ err: describeError(err) }, `could not refill the warm pod pool; trying again in ${REFILL_RETRY_MS / 1000} s`)
        // No event may come while the pool is short (none waits): look again anyway.
        setTimeout(() => this.fill(), REFILL_RETRY_MS).unref()
      })
      .finally(() => {
        this.filling = undefined
        if (this.fillAgain) {
          this.fillAgain = false
          this.fill()
        }
      })
  }

  /** Resolves once no fill is running (for a clean stop). */
  async idle(): Promise<void> {
    while (this.filling) await this.filling
  }

  private async refill(): Promise<void> {
    this.prune()
    const now = this.d.clock().getTime()
    const warm = this.d.jobs().filter((job) => isWarmJob(job) && claimedFor(job) === undefined)
    for (const job of warm) this.created.delete(job.metadata!.name!)
    for (const [name, at] of this.created) if (now - at > CREATED_UNSEEN_MS) this.created.delete(name)
    const waiting: V1Job[] = []
    for (const job of warm) {
      if (job.metadata?.deletionTimestamp) continue
      // Ended, or made from another config (an upgrade): the pool replaces it.
      if (jobFinished(job) || job.metadata?.labels?.[LABEL_WARM_TEMPLATE] !== this.template) await this.remove(job)
      else waiting.push(job)
    }
    await this.endNeverStartedPods(waiting)
    const missing = this.d.pool.count - waiting.length - this.created.size
    for (let i = 0; i < missing && this.d.leading(); i++) {
      const name = warmJobName(randomBytes(4).toString('hex'))
      await this.d.batch.createNamespacedJob({ namespace: this.d.namespace, body: buildWarmJob(name, this.d.namespace, this.d.pool, this.d.job) })
      this.created.set(name, this.d.clock().getTime())
      this.d.logger.info({ job: name }, 'created a warm runner Job')
    }
  }

  /** A waiting pod whose run container never started is deleted, so its Job makes another (run-container-start.ts). */
  private async endNeverStartedPods(waiting: readonly V1Job[]): Promise<void> {
    const names = new Set(waiting.map((job) => job.metadata?.name))
    const pods = this.d.pods().filter((pod) => names.has(pod.metadata?.labels?.[LABEL_JOB_NAME]))
    for (const pod of podsToEnd(pods)) {
      try {
        await this.d.core.deleteNamespacedPod({ name: pod.metadata!.name!, namespace: this.d.namespace, body: { preconditions: { uid: pod.metadata!.uid } } })
      } catch (err) {
        if (!isNotFound(err) && !isConflict(err)) throw err
      }
    }
  }

  /** An unclaimed warm Job that ended or is out of date; conditional on the version read, so a claimed one is never deleted here. */
  private async remove(job: V1Job): Promise<void> {
    try {
      await this.d.batch.deleteNamespacedJob({
        name: job.metadata!.name!, namespace: this.d.namespace,
        body: { propagationPolicy: 'Background', preconditions: { uid: job.metadata!.uid, resourceVersion: job.metadata!.resourceVersion } },
      })
      this.d.logger.info({ job: job.metadata?.name }, 'deleted an unclaimed warm runner Job that ended or is out of date')
    } catch (err) {
      if (!isNotFound(err) && !isConflict(err)) throw err
    }
  }
}
