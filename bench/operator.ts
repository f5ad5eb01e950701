/**
 * Operator benchmark against the harness kube-apiserver (run after `npx tsc`:
 * `npm run -s bench -- operator`).
 *   1. latency: MediaCommand created → its Job created (seen on a watch), one at a time; target p99 < 100 ms
 *   2. throughput: a burst of MediaCommands, reconciled (Job created and status written); target ≥ 20/s
 *   3. end to end without a runner: the test node agent completes every Job; MediaCommands/s reaching SUCCESS
 * Runner exit → SUCCESS in MongoDB needs the runner and the projector: bench/runner-to-mongo.ts.
 */
import { performance } from 'node:perf_hooks'
import { Watch, type V1Job } from '@kubernetes/client-node'
import { KubernetesExecutor } from '../api/executors/kubernetes-executor.js'
import type { MediaCommand } from '../contracts/media-command.js'
import { startKube } from '../test/harness/kube.js'
import { commandSpec } from '../test/operator/fixtures.js'
import { installCrd, newNamespace, settings, startOperator } from '../test/operator/kube-setup.js'
import { NodeAgent } from '../test/operator/node-agent.js'
import { percentile, printTable } from './table.js'
import { benchRun } from './bench-run.js'

const LATENCY_SAMPLES = Number(process.env.BENCH_LATENCY_SAMPLES ?? 200)
const BURST = Number(process.env.BENCH_BURST ?? 500)
const CONCURRENCY = 16

const { t, run: runBench } = benchRun()

/** Calls back with the time each object is first seen, per command id (the object's name or its command-id label). */
async function watchTimes<T extends { metadata?: { name?: string; labels?: Record<string, string> } }>(
  kc: ReturnType<Awaited<ReturnType<typeof startKube>>['kubeConfig']>, path: string, seen: (obj: T, type: string) => void,
): Promise<void> {
  const controller = await new Watch(kc).watch(path, {}, (type, obj: T) => seen(obj, type), () => {})
  t.teardown(() => controller.abort())
}

async function inBatches<T>(items: T[], n: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0
  await Promise.all(Array.from({ length: n }, async () => {
    while (next < items.length) await fn(items[next++]!)
  }))
}

async function main(): Promise<void> {
  const kube = await startKube(t)
  const kc = kube.kubeConfig()
  await installCrd(kc)

  // 1: latency, one command at a time so each measures the operator and not a queue behind it.
  const ns1 = await newNamespace(kc, 'bench-latency')
  const op1 = await startOperator(t, kc, settings(ns1, { workers: 4 }))
  while (!op1.isLeader) await new Promise((resolve) => setTimeout(resolve, 20))
  const jobSeen = new Map<string, (at: number) => void>()
  await watchTimes<V1Job>(kc, `/apis/batch/v1/namespaces/${ns1}/jobs`, (job, type) => {
    if (type === 'ADDED') jobSeen.get(job.metadata!.labels!['ffkube.io/command-id']!)?.(performance.now())
  })
  const executor1 = new KubernetesExecutor({ kubeConfig: kc, namespace: ns1 })
  const latencies: number[] = []
  for (let i = 0; i < LATENCY_SAMPLES + 10; i++) {
    const spec = commandSpec()
    const seen = new Promise<number>((resolve) => jobSeen.set(spec.commandId, resolve))
    const start = performance.now()
    await executor1.execute(spec)
    const at = await Promise.race([seen, new Promise<number>((_, reject) => setTimeout(() => reject(new Error(`no Job seen for sample ${i} within 10 s`)), 10_000))])
    if (i >= 10) latencies.push(at - start) // the first few warm up connections and the JIT
  }
  latencies.sort((a, b) => a - b)

  // 2: a burst, counted until every command has its Job and a written status.
  const ns2 = await newNamespace(kc, 'bench-burst')
  await startOperator(t, kc, settings(ns2, { workers: 8 }))
  const queued = new Set<string>()
  let allQueued!: () => void
  const burstDone = new Promise<void>((resolve) => (allQueued = resolve))
  await watchTimes<MediaCommand>(kc, `/apis/ffkube.io/v1alpha1/namespaces/${ns2}/mediacommands`, (mc) => {
    if (mc.status?.phase && mc.status.jobName) queued.add(mc.metadata.name)
    if (queued.size === BURST) allQueued()
  })
  const executor2 = new KubernetesExecutor({ kubeConfig: kc, namespace: ns2 })
  const specs2 = Array.from({ length: BURST }, () => commandSpec())
  const burstStart = performance.now()
  await inBatches(specs2, CONCURRENCY, (s) => executor2.execute(s))
  const submittedIn = performance.now() - burstStart
  await burstDone
  const burstSeconds = (performance.now() - burstStart) / 1000

  // 3: the same burst with the node agent completing every Job, until every command is SUCCESS.
  const ns3 = await newNamespace(kc, 'bench-e2e')
  const agent = new NodeAgent(kc, ns3, 'complete')
  await agent.start()
  t.teardown(() => agent.stop())
  await startOperator(t, kc, settings(ns3, { workers: 8 }))
  const succeeded = new Set<string>()
  let allSucceeded!: () => void
  const e2eDone = new Promise<void>((resolve) => (allSucceeded = resolve))
  await watchTimes<MediaCommand>(kc, `/apis/ffkube.io/v1alpha1/namespaces/${ns3}/mediacommands`, (mc) => {
    if (mc.status?.phase === 'SUCCESS') succeeded.add(mc.metadata.name)
    if (succeeded.size === BURST) allSucceeded()
  })
  const executor3 = new KubernetesExecutor({ kubeConfig: kc, namespace: ns3 })
  const specs3 = Array.from({ length: BURST }, () => commandSpec())
  const e2eStart = performance.now()
  await inBatches(specs3, CONCURRENCY, (s) => executor3.execute(s))
  await e2eDone
  const e2eSeconds = (performance.now() - e2eStart) / 1000

  const rows: Array<[string, string, string]> = [
    [`MediaCommand created → Job created, p50 (n=${latencies.length})`, `${percentile(latencies, 50).toFixed(1)} ms`, ''],
    ['MediaCommand created → Job created, p99', `${percentile(latencies, 99).toFixed(1)} ms`, '< 100 ms'],
    ['MediaCommand created → Job created, max', `${latencies[latencies.length - 1]!.toFixed(1)} ms`, ''],
    [`burst of ${BURST}: reconciled (Job + status) per second`, `${(BURST / burstSeconds).toFixed(1)} /s`, '≥ 20 /s'],
    [`burst of ${BURST}: submitted (${CONCURRENCY} concurrent creates) in`, `${(submittedIn / 1000).toFixed(2)} s`, ''],
    [`burst of ${BURST} with the node agent: SUCCESS per second`, `${(BURST / e2eSeconds).toFixed(1)} /s`, ''],
  ]
  printTable(rows)
}

await runBench(main)
