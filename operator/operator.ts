/**
 * Wires the operator together: three informers (MediaCommands, and the Jobs
 * and pods it owns) and the runner's status events feed one work queue;
 * workers run reconciles only while this replica holds the Lease. Every
 * replica keeps its caches warm, so a new leader starts at once.
 */
import { EventEmitter } from 'node:events'
import { performance } from 'node:perf_hooks'
import {
  BatchV1Api,
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  EventsV1Api,
  type KubeConfig,
  type V1Job,
  type V1Pod,
} from '@kubernetes/client-node'
import type { NatsConnection } from 'nats'
import type { Logger } from 'pino'
import {
  LABEL_COMMAND_ID,
  MEDIA_COMMAND_GROUP,
  MEDIA_COMMAND_PLURAL,
  MEDIA_COMMAND_VERSION,
  type MediaCommand,
} from '../contracts/media-command.js'
import type { OperatorConfig } from './config.js'
import { EventRecorder } from './events.js'
import { FinishedCommands } from './finished-commands.js'
import { LABEL_MANAGED_BY, MANAGED_BY } from './job-builder.js'
import type { Caches } from './caches.js'
import { reuseConnections } from './kube-client.js'
import { describeError } from './kube-errors.js'
import { LeaderElector } from './leader-election.js'
import { Metrics } from './metrics.js'
import { ownerKey, Reconciler } from './reconciler.js'
import { RunnerEvents, runnerEventsDurable } from './runner-events.js'
import { RunnerReports } from './runner-reports.js'
import { noPublisher, type TerminalPublisher } from './terminal-publisher.js'
import { WarmPool } from './warm-pool.js'
import { LABEL_WARM_POD } from './warm-pods.js'
import { Informer, type ListResult } from './watch.js'
import { WorkQueue } from './work-queue.js'

/** setTimeout cannot wait past ~24.8 days; long retentions are re-checked hourly instead. */
const MAX_REQUEUE_MS = 3_600_000
/** How long a failed Job waits for the runner's FAILED event (its precise reason) before the operator's generic one. */
const RUNNER_REPORT_GRACE_MS = 5_000

export type OperatorSettings = Pick<
  OperatorConfig,
  'namespace' | 'identity' | 'job' | 'warmPods' | 'retentionSeconds' | 'imagePullGraceSeconds' | 'workers' | 'leaseName' | 'leaseDurationSeconds' | 'renewDeadlineSeconds' | 'retryPeriodSeconds'
>

export interface OperatorOptions {
  kubeConfig: KubeConfig
  config: OperatorSettings
  logger: Logger
  publisher?: TerminalPublisher
  /** When set, the runner's status events (progress, outputs, reasons) flow into CR status. */
  nats?: NatsConnection
  metrics?: Metrics
  clock?: () => Date
  /** Lease periods in milliseconds, for tests that cannot wait seconds; defaults come from config. */
  leaseTimingMs?: { duration: number; renewDeadline: number; retryPeriod: number }
}

/** Emits `lost-leadership` when renewals failed: the process should exit and start over, as client-go's do. */
export class Operator extends EventEmitter {
  readonly metrics: Metrics
  readonly queue: WorkQueue
  readonly mediaCommands: Informer<MediaCommand>
  readonly jobs: Informer<V1Job>
  readonly pods: Informer<V1Pod>
  readonly elector: LeaderElector
  private readonly reconciler: Reconciler
  private readonly warm: WarmPool
  private readonly reports = new RunnerReports()
  private readonly logger: Logger
  private readonly leaseAbort = new AbortController()
  private workers: Promise<void>[] = []
  private election: Promise<void> | undefined
  private runnerEvents: RunnerEvents | undefined
  private runnerEventsRetry: NodeJS.Timeout | undefined
  private stopping = false

  constructor(private readonly o: OperatorOptions) {
    super()
    const { config, logger } = o
    const kc = reuseConnections(o.kubeConfig)
    this.logger = logger
    this.metrics = o.metrics ?? new Metrics()
    const objects = kc.makeApiClient(CustomObjectsApi)
    const batch = kc.makeApiClient(BatchV1Api)
    const core = kc.makeApiClient(CoreV1Api)
    const ns = config.namespace
    const ours = `${LABEL_MANAGED_BY}=${MANAGED_BY}`
    this.queue = new WorkQueue({ onDepth: (depth) => (this.metrics.queueDepth = depth) })

    this.mediaCommands = new Informer<MediaCommand>({
      name: 'mediacommands', kubeConfig: kc, logger,
      path: `/apis/${MEDIA_COMMAND_GROUP}/${MEDIA_COMMAND_VERSION}/namespaces/${ns}/${MEDIA_COMMAND_PLURAL}`,
      list: () => objects.listNamespacedCustomObject({ group: MEDIA_COMMAND_GROUP, version: MEDIA_COMMAND_VERSION, plural: MEDIA_COMMAND_PLURAL, namespace: ns }) as Promise<ListResult<MediaCommand>>,
    })
    this.jobs = new Informer<V1Job>({
      name: 'jobs', kubeConfig: kc, logger, labelSelector: ours,
      path: `/apis/batch/v1/namespaces/${ns}/jobs`,
      list: () => batch.listNamespacedJob({ namespace: ns, labelSelector: ours }),
    })
    this.pods = new Informer<V1Pod>({
      name: 'pods', kubeConfig: kc, logger, labelSelector: ours,
      path: `/api/v1/namespaces/${ns}/pods`,
      list: () => core.listNamespacedPod({ namespace: ns, labelSelector: ours }),
    })
    this.metrics.runnerPodPhases = () => this.pods.list().map((pod) => pod.status?.phase)
    this.routeInformerEvents()

    const caches: Caches = {
      mediaCommand: (namespace, name) => this.mediaCommands.get(namespace, name),
      job: (namespace, name) => this.jobs.get(namespace, name),
      podsOf: (namespace, id) => this.pods.list().filter((p) => p.metadata?.namespace === namespace && p.metadata?.labels?.[LABEL_COMMAND_ID] === id),
    }
    const events = new EventRecorder(kc.makeApiClient(EventsV1Api), config.identity, logger, o.clock)
    const clock = o.clock ?? (() => new Date())
    this.warm = new WarmPool({
      batch, core, namespace: ns, job: config.job, pool: config.warmPods, logger, clock,
      jobs: () => this.jobs.list(), pods: () => this.pods.list(),
      leading: () => this.elector.isLeader && !this.queue.isShuttingDown,
    })
    this.reconciler = new Reconciler({
      objects, batch, core, caches,
      job: config.job,
      retentionSeconds: config.retentionSeconds,
      imagePullGraceSeconds: config.imagePullGraceSeconds,
      // Without NATS no runner event can come, so there is nothing to wait for.
      runnerReportGraceMs: o.nats ? RUNNER_REPORT_GRACE_MS : 0,
      events,
      warm: this.warm,
      finished: new FinishedCommands({ batch, core, caches, events, publisher: o.publisher ?? noPublisher, clock }),
      reports: this.reports,
      metrics: this.metrics,
      logger,
      clock,
    })

    const timing = o.leaseTimingMs ?? {
      duration: config.leaseDurationSeconds * 1000, renewDeadline: config.renewDeadlineSeconds * 1000, retryPeriod: config.retryPeriodSeconds * 1000,
    }
    this.elector = new LeaderElector({
      api: kc.makeApiClient(CoordinationV1Api), namespace: ns, name: config.leaseName, identity: config.identity, logger,
      leaseDurationMs: timing.duration, renewDeadlineMs: timing.renewDeadline, retryPeriodMs: timing.retryPeriod,
    })
    this.elector.on('started-leading', () => this.startWorkers())
    this.elector.on('stopped-leading', () => {
      this.metrics.isLeader = 0
      this.standDown().catch((err: unknown) => logger.error({ err }, 'could not stand down cleanly'))
    })
  }

  /** Handlers only enqueue keys; the worker reads the current object from the cache. */
  private routeInformerEvents(): void {
    const enqueueSelf = (mc: MediaCommand): void => this.queue.add(`${mc.metadata.namespace}/${mc.metadata.name}`)
    const enqueueOwner = (obj: V1Job | V1Pod): void => {
      const key = ownerKey(obj)
      if (key) this.queue.add(key)
    }
    // A warm Job or pod that changed may change how many wait: the pool counts again.
    const fillPool = (obj: V1Job | V1Pod): void => {
      if (obj.metadata?.labels?.[LABEL_WARM_POD] === 'true') this.warm.fill()
    }
    for (const verb of ['add', 'update', 'delete']) {
      this.mediaCommands.on(verb, enqueueSelf)
      this.jobs.on(verb, enqueueOwner)
      this.pods.on(verb, enqueueOwner)
      this.jobs.on(verb, fillPool)
      this.pods.on(verb, fillPool)
    }
  }

  /** Starts the informers, waits for their first lists, then campaigns for the Lease (in the background). */
  async start(): Promise<void> {
    await Promise.all([this.mediaCommands.start(), this.jobs.start(), this.pods.start()])
    this.logger.info({ namespace: this.o.config.namespace, identity: this.o.config.identity }, 'caches synced, campaigning for leadership')
    this.election = this.elector.run(this.leaseAbort.signal).then(() => {
      if (!this.leaseAbort.signal.aborted) this.emit('lost-leadership')
    })
  }

  get isLeader(): boolean {
    return this.elector.isLeader
  }

  /** Graceful: workers finish their current key, then the Lease is released, then the watches close. */
  async stop(): Promise<void> {
    this.stopping = true
    await this.standDown()
    this.leaseAbort.abort()
    await this.election
    await Promise.all([this.mediaCommands.stop(), this.jobs.stop(), this.pods.stop()])
  }

  /**
   * Stops acting: no key is handed out any more, no runner event is taken, workers finish their
   * current key, and the events not yet in a written status go back to the stream at once, for
   * the next leader rather than after the consumer's ack wait.
   */
  private async standDown(): Promise<void> {
    this.queue.shutDown()
    clearTimeout(this.runnerEventsRetry)
    await this.runnerEvents?.stop()
    await Promise.all(this.workers)
    await this.warm.idle()
    this.reports.releaseAll()
  }

  private startWorkers(): void {
    this.metrics.isLeader = 1
    // A new leader looks at everything once: commands may have moved while another replica led.
    for (const mc of this.mediaCommands.list()) this.queue.add(`${mc.metadata.namespace}/${mc.metadata.name}`)
    for (let i = 0; i < this.o.config.workers; i++) this.workers.push(this.work())
    this.warm.fill()
    this.startRunnerEvents()
  }

  /** Follows the runner's status stream; until the stream exists (the runner or projector creates it) it retries. */
  private startRunnerEvents(): void {
    const nats = this.o.nats
    if (!nats || this.stopping || this.queue.isShuttingDown) return
    const ns = this.o.config.namespace
    const events = new RunnerEvents({
      nats, logger: this.logger, durableName: runnerEventsDurable(ns), reports: this.reports,
      keyOf: (id) => (this.mediaCommands.get(ns, id) ? `${ns}/${id}` : undefined),
      // As the informers' handlers do: only the key; the reconcile reads the rest.
      enqueue: (key) => this.queue.add(key),
    })
    events.start().then(async () => {
      this.runnerEvents = events
      if (!this.stopping && !this.queue.isShuttingDown) return
      // Stood down while this was starting: give back what it took meanwhile.
      await events.stop()
      this.reports.releaseAll()
    }, (err: unknown) => {
      this.logger.warn({ err: String(err) }, 'runner status stream not available yet, retrying in 1 s')
      this.runnerEventsRetry = setTimeout(() => this.startRunnerEvents(), 1000)
    })
  }

  private async work(): Promise<void> {
    for (;;) {
      const key = await this.queue.get()
      if (key === undefined) return
      // A replica that lost the Lease must not act, even on keys it already took.
      if (!this.elector.isLeader) {
        this.queue.done(key)
        continue
      }
      const started = performance.now()
      try {
        const result = await this.reconciler.reconcile(key)
        this.queue.forget(key)
        if (result.requeueAfterMs !== undefined) this.queue.addAfter(key, Math.min(result.requeueAfterMs, MAX_REQUEUE_MS))
        this.metrics.observeReconcile((performance.now() - started) / 1000, false)
      } catch (err) {
        this.metrics.observeReconcile((performance.now() - started) / 1000, true)
        this.logger.warn({ command_id: key.split('/')[1], err: describeError(err), retries: this.queue.numRequeues(key) }, 'reconcile failed, retrying with backoff')
        this.queue.addRateLimited(key)
      } finally {
        this.queue.done(key)
      }
    }
  }
}
