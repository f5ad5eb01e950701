/**
 * Plays the node and the Job controller for the harness, which has neither:
 * watches the Jobs the operator creates and, per command, creates the Job's pod
 * and writes pod and Job status the way the kubelet and the Job controller
 * would for the outcome a test asks for.
 *
 * Outcome `runner` runs the pod as a kubelet would (pod-runner.ts): the real
 * runner (runner-image/runner/main.ts) once per container, init containers
 * first and the regular ones together, each with that container's own env
 * and argv (`--phase fetch-run|upload`); pod status follows the containers
 * and the Job ends complete or failed from the exit codes.
 * `complete` and the failure outcomes only write status, for tests of the
 * Kubernetes side.
 */
import {
  BatchV1Api,
  CoreV1Api,
  PatchStrategy,
  setHeaderOptions,
  Watch,
  type KubeConfig,
  type V1Container,
  type V1ContainerStatus,
  type V1Job,
  type V1Pod,
  type V1PodStatus,
} from '@kubernetes/client-node'
import type { ContainerRun, PodRunner } from './pod-runner.js'

/** What happens to a command's pod. `hold`: it runs until the test calls act(). */
export type Outcome = 'complete' | 'deadline' | 'oom' | 'evicted' | 'pod-lost' | 'image-pull' | 'exit-1' | 'start-error' | 'running' | 'hold' | 'runner'

const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch)
const COMMAND_ID = 'ffkube.io/command-id'

function terminated(c: V1Container, exitCode: number, reason: string, message?: string): V1ContainerStatus {
  const at = new Date().toISOString()
  return {
    name: c.name, image: c.image!, imageID: 'sha256:0', ready: false, restartCount: 0,
    state: { terminated: { exitCode, reason, ...(message ? { message } : {}), startedAt: at as unknown as Date, finishedAt: at as unknown as Date } },
  }
}

function running(c: V1Container): V1ContainerStatus {
  return { name: c.name, image: c.image!, imageID: 'sha256:0', ready: false, restartCount: 0, state: { running: { startedAt: new Date() } } }
}

/** Pod status while (or after) the runner ran some containers: finished ones terminated, the current ones running, later ones waiting. */
function statusesOf(pod: V1Pod, done: ContainerRun[], current: V1Container[] = []): Pick<V1PodStatus, 'phase' | 'initContainerStatuses' | 'containerStatuses'> {
  const spec = pod.spec!
  const of = (c: V1Container): V1ContainerStatus => {
    const run = done.find((r) => r.name === c.name)
    if (run) return terminated(c, run.exitCode, run.exitCode === 0 ? 'Completed' : 'Error')
    return current.includes(c) ? running(c) : waiting(c, 'PodInitializing')
  }
  const failed = done.some((r) => r.exitCode !== 0)
  const finished = failed || done.length === (spec.initContainers ?? []).length + spec.containers.length
  const phase = failed ? 'Failed' : finished ? 'Succeeded' : current.some((c) => spec.containers.includes(c)) ? 'Running' : 'Pending'
  return { phase, initContainerStatuses: (spec.initContainers ?? []).map(of), containerStatuses: spec.containers.map(of) }
}

function waiting(c: V1Container, reason: string): V1ContainerStatus {
  const message = reason === 'PodInitializing' ? undefined : `Back-off pulling image "${c.image}"`
  return { name: c.name, image: c.image!, imageID: '', ready: false, restartCount: 0, state: { waiting: { reason, ...(message ? { message } : {}) } } }
}

export class NodeAgent {
  private readonly batch: BatchV1Api
  private readonly core: CoreV1Api
  private readonly outcomes = new Map<string, Outcome>()
  private readonly handled = new Set<string>()
  private readonly jobs = new Map<string, V1Job>()
  private watch: AbortController | undefined
  private stopped = false
  /** Jobs seen (by uid), so a test can count creations. */
  readonly seen: V1Job[] = []
  errors: unknown[] = []

  constructor(
    private readonly kc: KubeConfig, private readonly namespace: string, private readonly fallback: Outcome = 'complete',
    private readonly pods?: PodRunner,
  ) {
    this.batch = kc.makeApiClient(BatchV1Api)
    this.core = kc.makeApiClient(CoreV1Api)
  }

  /** Chooses what happens to a command's pod; set before its Job appears. */
  expect(commandId: string, outcome: Outcome): void {
    this.outcomes.set(commandId, outcome)
  }

  async start(): Promise<void> {
    // Pods need their service account to exist; the harness has no controller-manager to make it.
    await this.core.createNamespacedServiceAccount({ namespace: this.namespace, body: { metadata: { name: 'default' } } }).catch((err: { code?: number }) => {
      if (err.code !== 409) throw err
    })
    await this.connect()
  }

  stop(): void {
    this.stopped = true
    this.watch?.abort()
  }

  private async connect(): Promise<void> {
    this.watch = await new Watch(this.kc).watch(
      `/apis/batch/v1/namespaces/${this.namespace}/jobs`, {},
      (type, job: V1Job) => {
        // A warm Job made ahead of any command (operator/warm-pods.ts) is left waiting: this node runs commands only.
        const id = job.metadata?.labels?.[COMMAND_ID]
        if (type !== 'ADDED' || this.handled.has(job.metadata!.uid!) || id === undefined) return
        this.handled.add(job.metadata!.uid!)
        this.seen.push(job)
        this.jobs.set(id, job)
        this.act(id, this.outcomes.get(id) ?? this.fallback).catch((err: unknown) => this.errors.push(err))
      },
      () => {
        if (!this.stopped) setTimeout(() => this.connect().catch((err: unknown) => this.errors.push(err)), 50)
      },
    )
  }

  /** Drives a command's Job (and pod) to an outcome now. */
  async act(commandId: string, outcome: Outcome): Promise<void> {
    const seen = this.jobs.get(commandId)
    if (!seen) throw new Error(`no Job seen for ${commandId}`)
    if (outcome === 'hold') return
    const job = await this.batch.readNamespacedJob({ name: seen.metadata!.name!, namespace: this.namespace })
    const pod = outcome === 'pod-lost' ? undefined : await this.ensurePod(job)
    const containers = [...(job.spec!.template.spec!.initContainers ?? []), ...job.spec!.template.spec!.containers]
    const started = job.status?.startTime ?? new Date(Math.floor(Date.now() / 1000) * 1000 - 2000)
    switch (outcome) {
      case 'runner': {
        if (!this.pods || !pod) throw new Error('outcome runner needs a PodRunner')
        await this.jobStatus(job, { startTime: started, active: 1, ready: 0 })
        const done = await this.pods.run(pod.metadata!.name!, pod.spec!, (current, so) => this.podStatus(pod, statusesOf(pod, so, current)))
        await this.podStatus(pod, statusesOf(pod, done))
        if (done.some((r) => r.exitCode !== 0)) return this.failJob(job, started, 'BackoffLimitExceeded', 'Job has reached the specified backoff limit')
        return this.completeJob(job, started)
      }
      case 'running':
        await this.podStatus(pod, { phase: 'Running', containerStatuses: containers.map(running) })
        return this.jobStatus(job, { startTime: started, active: 1, ready: 1 })
      case 'image-pull':
        await this.podStatus(pod, { phase: 'Pending', containerStatuses: containers.map((c) => waiting(c, 'ImagePullBackOff')) })
        return this.jobStatus(job, { startTime: started, active: 1, ready: 0 })
      case 'complete': {
        await this.podStatus(pod, {
          phase: 'Succeeded',
          containerStatuses: containers.map((c) => terminated(c, 0, 'Completed')),
        })
        return this.completeJob(job, started)
      }
      case 'deadline':
        await this.podStatus(pod, { phase: 'Failed', reason: 'DeadlineExceeded' })
        return this.failJob(job, started, 'DeadlineExceeded', 'Job was active longer than specified deadline')
      case 'oom':
        await this.podStatus(pod, {
          phase: 'Failed',
          // The ffmpeg container killed; the upload container beside it then exits 1 without a word (runner-image/runner/hand-over.ts).
          containerStatuses: [terminated(containers[0]!, 137, 'OOMKilled'), terminated(containers[1]!, 1, 'Error')],
        })
        return this.failJob(job, started, 'BackoffLimitExceeded', 'Job has reached the specified backoff limit')
      case 'exit-1':
        await this.podStatus(pod, { phase: 'Failed', containerStatuses: [terminated(containers[0]!, 1, 'Error'), terminated(containers[1]!, 0, 'Completed')] })
        return this.failJob(job, started, 'BackoffLimitExceeded', 'Job has reached the specified backoff limit')
      case 'start-error':
        // The runtime could not start the ffmpeg container (a containerd restart); the upload container waits beside it.
        await this.podStatus(pod, {
          phase: 'Running',
          containerStatuses: [terminated(containers[0]!, 128, 'StartError', 'failed to create containerd task: ttrpc: closed'), running(containers[1]!)],
        })
        return this.jobStatus(job, { startTime: started, active: 1, ready: 0 })
      case 'evicted':
        await this.podStatus(pod, {
          phase: 'Failed', reason: 'Evicted', message: 'The node was low on resource: ephemeral-storage.',
          conditions: [{ type: 'DisruptionTarget', status: 'True', reason: 'TerminationByKubelet', message: 'evicted', lastTransitionTime: new Date() }],
        })
        return this.failJob(job, started, 'BackoffLimitExceeded', 'Job has reached the specified backoff limit')
      case 'pod-lost':
        return this.failJob(job, started, 'BackoffLimitExceeded', 'Job has reached the specified backoff limit')
    }
  }

  private async completeJob(job: V1Job, started: Date): Promise<void> {
    const done = new Date()
    await this.jobStatus(job, {
      startTime: started, completionTime: done, succeeded: 1, active: 0, ready: 0, terminating: 0,
      conditions: [
        { type: 'SuccessCriteriaMet', status: 'True', reason: 'CompletionsReached', message: 'Reached expected number of succeeded pods', lastTransitionTime: done, lastProbeTime: done },
        { type: 'Complete', status: 'True', reason: 'CompletionsReached', message: 'Reached expected number of succeeded pods', lastTransitionTime: done, lastProbeTime: done },
      ],
    })
  }

  private async failJob(job: V1Job, started: Date, reason: string, message: string): Promise<void> {
    const at = new Date()
    await this.jobStatus(job, {
      startTime: started, failed: 1, active: 0, ready: 0, terminating: 0,
      conditions: [
        { type: 'FailureTarget', status: 'True', reason, message, lastTransitionTime: at, lastProbeTime: at },
        { type: 'Failed', status: 'True', reason, message, lastTransitionTime: at, lastProbeTime: at },
      ],
    })
  }

  /** The Job's pod as the Job controller would create it from the template. */
  private async ensurePod(job: V1Job): Promise<V1Pod> {
    const name = `${job.metadata!.name!.slice(0, 56)}-pod`
    try {
      return await this.core.readNamespacedPod({ name, namespace: this.namespace })
    } catch {
      return this.core.createNamespacedPod({
        namespace: this.namespace,
        body: {
          metadata: {
            name,
            labels: { ...job.spec!.template.metadata!.labels },
            ownerReferences: [{ apiVersion: 'batch/v1', kind: 'Job', name: job.metadata!.name!, uid: job.metadata!.uid!, controller: true }],
          },
          spec: job.spec!.template.spec!,
        },
      })
    }
  }

  private async podStatus(pod: V1Pod | undefined, status: V1PodStatus): Promise<void> {
    if (!pod) return
    await this.core.patchNamespacedPodStatus(
      { name: pod.metadata!.name!, namespace: this.namespace, body: { status: { startTime: new Date(Date.now() - 1000), ...status } } },
      merge,
    )
  }

  private async jobStatus(job: V1Job, status: V1Job['status']): Promise<void> {
    await this.batch.patchNamespacedJobStatus({ name: job.metadata!.name!, namespace: this.namespace, body: { status } }, merge)
  }

  /** Deletes a command's pod, as a node drain or a person would. */
  async deletePod(commandId: string): Promise<void> {
    const job = this.jobs.get(commandId)
    await this.core.deleteNamespacedPod({ name: `${job!.metadata!.name!.slice(0, 56)}-pod`, namespace: this.namespace })
  }
}
