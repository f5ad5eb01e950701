/**
 * The operator's Prometheus metrics in the text exposition format, without a
 * client library: six series families do not need one (prom-client would
 * replace this file one for one if more appear).
 */
import { createServer, type Server } from 'node:http'

/** Upper bounds of the reconcile-duration histogram, in seconds. */
const BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]
/** The pod phases Kubernetes defines: each is rendered, 0 when no runner pod is in it, so every series exists. */
const POD_PHASES = ['Pending', 'Running', 'Succeeded', 'Failed', 'Unknown'] as const

export class Metrics {
  queueDepth = 0
  isLeader = 0
  private readonly bucketCounts = BUCKETS.map(() => 0)
  private durationSum = 0
  private durationCount = 0
  private readonly reconcileErrors = { count: 0 }
  private readonly jobs = new Map<string, number>()
  /** The phases of the runner pods in the informer's cache, read when /metrics is scraped. */
  runnerPodPhases: () => ReadonlyArray<string | undefined> = () => []

  /** One reconcile took `seconds`; `failed` when it threw and was re-queued. */
  observeReconcile(seconds: number, failed: boolean): void {
    BUCKETS.forEach((le, i) => {
      if (seconds <= le) this.bucketCounts[i]! += 1
    })
    this.durationSum += seconds
    this.durationCount += 1
    if (failed) this.reconcileErrors.count += 1
  }

  /** A command's Job ended: `created`, `succeeded`, or the failure's errorStatus. */
  countJob(outcome: string): void {
    this.jobs.set(outcome, (this.jobs.get(outcome) ?? 0) + 1)
  }

  jobCount(outcome: string): number {
    return this.jobs.get(outcome) ?? 0
  }

  /** The exposition text for GET /metrics. */
  render(): string {
    const lines = [
      '# HELP ffkube_operator_queue_depth MediaCommand keys waiting for a worker.',
      '# TYPE ffkube_operator_queue_depth gauge',
      `ffkube_operator_queue_depth ${this.queueDepth}`,
      '# HELP ffkube_operator_is_leader 1 while this replica holds the Lease.',
      '# TYPE ffkube_operator_is_leader gauge',
      `ffkube_operator_is_leader ${this.isLeader}`,
      '# HELP ffkube_operator_reconcile_duration_seconds Time spent in one reconcile.',
      '# TYPE ffkube_operator_reconcile_duration_seconds histogram',
      ...BUCKETS.map((le, i) => `ffkube_operator_reconcile_duration_seconds_bucket{le="${le}"} ${this.bucketCounts[i]}`),
      `ffkube_operator_reconcile_duration_seconds_bucket{le="+Inf"} ${this.durationCount}`,
      `ffkube_operator_reconcile_duration_seconds_sum ${this.durationSum}`,
      `ffkube_operator_reconcile_duration_seconds_count ${this.durationCount}`,
      '# HELP ffkube_operator_reconcile_errors_total Reconciles that failed and were re-queued with backoff.',
      '# TYPE ffkube_operator_reconcile_errors_total counter',
      `ffkube_operator_reconcile_errors_total ${this.reconcileErrors.count}`,
      '# HELP ffkube_operator_jobs_total Jobs by outcome: created, claimed (a warm one made ahead), succeeded, or the failure reason.',
      '# TYPE ffkube_operator_jobs_total counter',
      ...[...this.jobs].sort().map(([outcome, n]) => `ffkube_operator_jobs_total{outcome="${outcome}"} ${n}`),
      '# HELP ffkube_runner_pods Runner pods in the runner namespace by phase, as this replica\'s pod cache holds them.',
      '# TYPE ffkube_runner_pods gauge',
      ...this.#runnerPodCounts(),
    ]
    return `${lines.join('\n')}\n`
  }

  #runnerPodCounts(): string[] {
    const phases = this.runnerPodPhases()
    return POD_PHASES.map((phase) => `ffkube_runner_pods{phase="${phase}"} ${phases.filter((p) => (p ?? 'Unknown') === phase).length}`)
  }
}

/** Serves /metrics and /healthz; resolves with the server once it listens. */
export function serveMetrics(metrics: Metrics, port: number, host: string): Promise<Server> {
  const server = createServer((req, res) => {
    if (req.url === '/metrics') {
      res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' }).end(metrics.render())
    } else if (req.url === '/healthz') {
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok\n')
    } else {
      res.writeHead(404).end()
    }
  })
  return new Promise((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, host, () => resolve(server))
  })
}
