/**
 * The Prometheus metrics of one API-side process (whatever FFKUBE_ROLES it
 * runs), on prom-client: node's process metrics plus one family per role.
 * Components get the narrow recorder they need, never the registry.
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client'

/** What the dispatcher reports: each hand-off to the executor, and how long its command waited for it. */
export interface DispatchRecorder {
  handOff(outcome: 'dispatched' | 'retry'): void
  /** A command was handed to the executor `seconds` after it was accepted. */
  waited(seconds: number): void
}

/** Commands waiting for their hand-off, by the plan of their account; read when /metrics is scraped. */
export type QueueDepthSource = () => Promise<Record<string, number>>

/** What the status projector reports: events applied and commands finished. */
export interface ProjectionRecorder {
  eventApplied(type: 'PROCESSING' | 'SUCCESS' | 'FAILED'): void
  commandFinished(status: 'SUCCESS' | 'FAILED'): void
  /** A command ended FAILED with this error_status (counted for CANCELLED and TIMEOUT). */
  commandFailedAs?(errorStatus: string): void
  /** A command of this type ended with this status `seconds` after it was accepted. */
  commandDuration?(type: string, status: 'SUCCESS' | 'FAILED', seconds: number): void
}

/** What the webhook deliverer reports: each attempt's outcome. */
export interface WebhookRecorder {
  attempt(outcome: 'success' | 'failure'): void
}

/** What the event streams (GET /commands/:id/events) report: how many are open, and how many commands they watch. */
export interface EventStreamRecorder {
  watchEventStreams(source: () => { open: number; watchedCommands: number }): void
}

/** Where a GET /commands/:id answer came from: the replica's cache of finished commands, or a store read. */
export interface CommandReadRecorder {
  commandRead(source: 'cache' | 'store'): void
}

export class ServiceMetrics implements DispatchRecorder, ProjectionRecorder, WebhookRecorder, EventStreamRecorder, CommandReadRecorder {
  readonly registry = new Registry()
  readonly #requests = new Counter({ name: 'ffkube_http_requests_total', help: 'HTTP requests by method, route pattern and status code.', labelNames: ['method', 'route', 'status_code'] as const, registers: [this.registry] })
  readonly #duration = new Histogram({
    name: 'ffkube_http_request_duration_seconds',
    help: 'Time from request to response, by method and route pattern.',
    labelNames: ['method', 'route'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  })
  readonly #handOffs = new Counter({ name: 'ffkube_dispatcher_handoffs_total', help: 'Commands handed to the executor (dispatched) or left for a retry.', labelNames: ['outcome'] as const, registers: [this.registry] })
  readonly #events = new Counter({ name: 'ffkube_status_events_applied_total', help: 'Runner status events the projector applied, by type.', labelNames: ['type'] as const, registers: [this.registry] })
  readonly #finished = new Counter({ name: 'ffkube_commands_finished_total', help: 'Commands that reached a terminal status.', labelNames: ['status'] as const, registers: [this.registry] })
  readonly #waited = new Histogram({
    name: 'ffkube_dispatch_wait_seconds',
    help: 'Time from a command\'s acceptance to its hand-off to the executor.',
    buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600],
    registers: [this.registry],
  })
  #queueDepth: QueueDepthSource | null = null
  readonly #depth = new Gauge({
    name: 'ffkube_dispatch_queue_depth',
    help: 'Commands accepted and waiting for their hand-off to the executor, by plan.',
    labelNames: ['plan'] as const,
    registers: [this.registry],
    collect: async () => {
      if (!this.#queueDepth) return
      this.#depth.reset()
      for (const [plan, depth] of Object.entries(await this.#queueDepth())) this.#depth.set({ plan }, depth)
    },
  })
  readonly #cancels = new Counter({ name: 'ffkube_cancels_total', help: 'Cancels the canceller carried out (POST /commands/:id/cancel of a QUEUED or PROCESSING command).', registers: [this.registry] })
  readonly #retentionSweeps = new Counter({ name: 'ffkube_retention_sweeps_total', help: 'Rounds of the worker\'s retention sweep that looked for every expired file.', registers: [this.registry] })
  readonly #expired = new Counter({ name: 'ffkube_files_expired_total', help: 'Managed files the retention sweep deleted after their expiry.', registers: [this.registry] })
  readonly #endedBy = new Counter({
    name: 'ffkube_commands_stopped_total',
    help: 'Commands ended FAILED by a cancel (reason CANCELLED) or by their time limit (reason TIMEOUT).',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  })
  readonly #commandDuration = new Histogram({
    name: 'ffkube_command_duration_seconds',
    help: 'Time from a command\'s acceptance to its terminal status, by command type and status.',
    labelNames: ['type', 'status'] as const,
    buckets: [0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 14400, 86400],
    registers: [this.registry],
  })
  readonly #commandReads = new Counter({
    name: 'ffkube_command_reads_total',
    help: 'GET /commands/:id answers by where they came from: this replica\'s cache of finished commands (cache) or a store read (store).',
    labelNames: ['source'] as const,
    registers: [this.registry],
  })
  readonly #webhooks = new Counter({ name: 'ffkube_webhook_attempts_total', help: 'Webhook delivery attempts by outcome.', labelNames: ['outcome'] as const, registers: [this.registry] })

  #eventStreams: () => { open: number; watchedCommands: number } = () => ({ open: 0, watchedCommands: 0 })
  readonly #openStreams = new Gauge({ name: 'ffkube_command_event_streams', help: 'Open event streams (GET /commands/:id/events) on this replica.', registers: [this.registry], collect: () => this.#collectStreams() })
  readonly #watchLoops = new Gauge({ name: 'ffkube_command_watch_loops', help: 'Commands whose record this replica reads every 250 ms for its event streams.', registers: [this.registry] })

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: 'ffkube_' })
  }

  /** `route` is the route's pattern (`/api/v1/commands/:commandId`), never the raw URL, so ids do not become series. */
  httpRequest(method: string, route: string, statusCode: number, seconds: number): void {
    this.#requests.inc({ method, route, status_code: String(statusCode) })
    this.#duration.observe({ method, route }, seconds)
  }

  handOff(outcome: 'dispatched' | 'retry'): void {
    this.#handOffs.inc({ outcome })
  }

  waited(seconds: number): void {
    this.#waited.observe(seconds)
  }

  /** The worker role tells where the queue depth is read (one database query per plan's accounts, at scrape time). */
  readQueueDepthFrom(source: QueueDepthSource): void {
    this.#queueDepth = source
  }

  eventApplied(type: 'PROCESSING' | 'SUCCESS' | 'FAILED'): void {
    this.#events.inc({ type })
  }

  commandFinished(status: 'SUCCESS' | 'FAILED'): void {
    this.#finished.inc({ status })
  }

  cancelCarriedOut(): void {
    this.#cancels.inc()
  }

  /** A retention sweep round ended, having deleted `expired` files. */
  retentionSwept(expired: number): void {
    this.#retentionSweeps.inc()
    this.#expired.inc(expired)
  }

  commandFailedAs(errorStatus: string): void {
    if (errorStatus === 'CANCELLED' || errorStatus === 'TIMEOUT') this.#endedBy.inc({ reason: errorStatus })
  }

  commandDuration(type: string, status: 'SUCCESS' | 'FAILED', seconds: number): void {
    this.#commandDuration.observe({ type, status }, seconds)
  }

  watchEventStreams(source: () => { open: number; watchedCommands: number }): void {
    this.#eventStreams = source
  }

  #collectStreams(): void {
    const { open, watchedCommands } = this.#eventStreams()
    this.#openStreams.set(open)
    this.#watchLoops.set(watchedCommands)
  }

  commandRead(source: 'cache' | 'store'): void {
    this.#commandReads.inc({ source })
  }

  attempt(outcome: 'success' | 'failure'): void {
    this.#webhooks.inc({ outcome })
  }
}
