import t from 'tap'
import { BatchV1Api, CoordinationV1Api, CustomObjectsApi, EventsV1Api } from '@kubernetes/client-node'
import { KubernetesExecutor } from '../../api/executors/kubernetes-executor.js'
import type { MediaCommand } from '../../contracts/media-command.js'
import { LeaderElector } from '../../operator/leader-election.js'
import { Informer, type ListResult } from '../../operator/watch.js'
import { programArgv } from '../harness/checkout.js'
import { startKube } from '../harness/kube.js'
import { commandSpec } from './fixtures.js'
import { cr, getMediaCommand, installCrd, newNamespace, settings, startOperator, testLogger } from './kube-setup.js'
import { eventually } from '../harness/eventually.js'
import { NodeAgent } from './node-agent.js'

const kube = await startKube(t)
const kc = kube.kubeConfig()
await installCrd(kc)
const batch = kc.makeApiClient(BatchV1Api)
const objects = kc.makeApiClient(CustomObjectsApi)
const leases = kc.makeApiClient(CoordinationV1Api)

const phase = (ns: string, id: string, want: string) =>
  eventually(`${id} to be ${want}`, async () => ((await getMediaCommand(kc, ns, id)).status?.phase === want ? true : undefined))
const jobCount = async (ns: string) => (await batch.listNamespacedJob({ namespace: ns })).items.length

t.test('an operator restarted mid-command picks it up without a second Job, after a graceful release', async (t) => {
  const ns = await newNamespace(kc, 'restart')
  const agent = new NodeAgent(kc, ns, 'hold')
  await agent.start()
  t.teardown(() => agent.stop())
  const first = await startOperator(t, kc, settings(ns, { identity: 'operator-a' }))
  await eventually('leadership', () => first.isLeader)
  const spec = commandSpec()
  await new KubernetesExecutor({ kubeConfig: kc, namespace: ns }).execute(spec)
  await phase(ns, spec.commandId, 'QUEUED')
  await agent.act(spec.commandId, 'running')
  await phase(ns, spec.commandId, 'PROCESSING')

  await first.stop()
  const lease = await leases.readNamespacedLease({ name: 'ffkube-operator', namespace: ns })
  t.equal(lease.spec!.holderIdentity, '', 'a graceful stop hands the Lease back')

  const second = await startOperator(t, kc, settings(ns, { identity: 'operator-b' }))
  await eventually('the second operator to lead', () => second.isLeader, 10_000)
  await agent.act(spec.commandId, 'complete')
  await phase(ns, spec.commandId, 'SUCCESS')
  t.equal(await jobCount(ns), 1, 'still one Job')
  t.equal(agent.seen.length, 1, 'the agent saw one Job created')
  t.equal(second.metrics.jobCount('created'), 0, 'the second operator created none')
})

t.test('of two replicas only the leader creates Jobs; the other takes over when it stops', async (t) => {
  const ns = await newNamespace(kc, 'replicas')
  const agent = new NodeAgent(kc, ns, 'complete')
  await agent.start()
  t.teardown(() => agent.stop())
  const a = await startOperator(t, kc, settings(ns, { identity: 'operator-a' }))
  const b = await startOperator(t, kc, settings(ns, { identity: 'operator-b' }))
  const leader = await eventually('a leader', () => (a.isLeader ? a : b.isLeader ? b : undefined))
  const follower = leader === a ? b : a
  t.notOk(follower.isLeader, 'exactly one leader')

  const executor = new KubernetesExecutor({ kubeConfig: kc, namespace: ns })
  const specs = Array.from({ length: 10 }, () => commandSpec())
  await Promise.all(specs.map((s) => executor.execute(s)))
  for (const s of specs) await phase(ns, s.commandId, 'SUCCESS')
  t.equal(await jobCount(ns), 10, 'one Job per command')
  t.equal(leader.metrics.jobCount('created'), 10)
  t.equal(follower.metrics.jobCount('created'), 0, 'the follower created nothing')
  t.match(follower.metrics.render(), /ffkube_operator_reconcile_duration_seconds_count 0/, 'the follower reconciled nothing')
  const events = await kc.makeApiClient(EventsV1Api).listNamespacedEvent({ namespace: ns })
  t.same(events.items.map((e) => `${e.reportingInstance} ${e.reason}`), [], 'successes record no Event, from either replica')

  await leader.stop()
  await eventually('the follower to take over', () => follower.isLeader, 10_000)
  const late = commandSpec()
  await executor.execute(late)
  await phase(ns, late.commandId, 'SUCCESS')
  t.equal(follower.metrics.jobCount('created'), 1, 'the new leader acts')
  t.equal(await jobCount(ns), 11)
})

t.test('a MediaCommand deleted by hand leaves its Job to the garbage collector and the operator carries on', async (t) => {
  const ns = await newNamespace(kc, 'deleted')
  const agent = new NodeAgent(kc, ns, 'hold')
  await agent.start()
  t.teardown(() => agent.stop())
  const operator = await startOperator(t, kc, settings(ns))
  const executor = new KubernetesExecutor({ kubeConfig: kc, namespace: ns })
  const doomed = commandSpec()
  await executor.execute(doomed)
  await phase(ns, doomed.commandId, 'QUEUED')
  const mc = await getMediaCommand(kc, ns, doomed.commandId)
  const job = await batch.readNamespacedJob({ name: `ffkube-${doomed.commandId}`, namespace: ns })
  t.match(job.metadata!.ownerReferences, [{ uid: mc.metadata.uid, controller: true, blockOwnerDeletion: true }], 'the Job is owned: the garbage collector deletes it')
  await objects.deleteNamespacedCustomObject({ ...cr, namespace: ns, name: doomed.commandId })
  await eventually('the CR to go from the cache', () => !operator.mediaCommands.get(ns, doomed.commandId))
  // The orphan Job still changes (the harness has no garbage collector): its reconcile finds no CR and stops.
  await agent.act(doomed.commandId, 'complete')

  const next = commandSpec()
  agent.expect(next.commandId, 'complete')
  await executor.execute(next)
  await phase(ns, next.commandId, 'SUCCESS')
  t.match(operator.metrics.render(), /ffkube_operator_reconcile_errors_total 0/, 'no reconcile failed')
  t.equal(await jobCount(ns), 2, 'no Job was made for the deleted command again')
})

t.test('a dropped watch reconnects and catches up with what happened meanwhile', async (t) => {
  const ns = await newNamespace(kc, 'dropped')
  const agent = new NodeAgent(kc, ns, 'complete')
  await agent.start()
  t.teardown(() => agent.stop())
  const operator = await startOperator(t, kc, settings(ns))
  await eventually('the watches to be open', () => operator.mediaCommands.isConnected && operator.jobs.isConnected)
  let reconnects = 0
  operator.mediaCommands.on('reconnect', () => reconnects++)
  let connects = 0
  operator.mediaCommands.on('connect', () => connects++)
  operator.mediaCommands.disconnect()
  operator.jobs.disconnect()
  const spec = commandSpec()
  await new KubernetesExecutor({ kubeConfig: kc, namespace: ns }).execute(spec)
  await phase(ns, spec.commandId, 'SUCCESS')
  t.ok(connects >= 1, `the watch connected again (${connects} connects, ${reconnects} reconnects)`)
  t.ok(operator.mediaCommands.isConnected)
})

t.test('a watch whose resourceVersion expired (410 Gone) relists, dropping objects deleted meanwhile', async (t) => {
  const ns = await newNamespace(kc, 'gone')
  const executor = new KubernetesExecutor({ kubeConfig: kc, namespace: ns })
  const kept = commandSpec()
  await executor.execute(kept)
  let lists = 0
  const list = async (): Promise<ListResult<MediaCommand>> => {
    const real = (await objects.listNamespacedCustomObject({ ...cr, namespace: ns })) as ListResult<MediaCommand>
    if (++lists > 1) return real
    // The first list pretends to be ancient: a resourceVersion long compacted, and an object since deleted.
    const ghost = { ...real.items[0]!, metadata: { ...real.items[0]!.metadata, name: 'ghost', resourceVersion: '1' } }
    return { items: [...real.items, ghost], metadata: { resourceVersion: '1' } }
  }
  const informer = new Informer<MediaCommand>({
    name: 'test', kubeConfig: kc, logger: testLogger, list,
    path: `/apis/ffkube.io/v1alpha1/namespaces/${ns}/mediacommands`,
  })
  const deleted: string[] = []
  informer.on('delete', (mc: MediaCommand) => deleted.push(mc.metadata.name))
  await informer.start()
  t.teardown(() => informer.stop())
  await eventually('a relist', () => lists >= 2)
  t.same(deleted, ['ghost'], 'the relist dropped the object that no longer exists')
  const later = commandSpec()
  await executor.execute(later)
  await eventually('the new object in the cache', () => informer.get(ns, later.commandId))
  t.ok(informer.get(ns, kept.commandId))
  t.notOk(informer.get(ns, 'ghost'))
})

t.test('finished MediaCommands are deleted after the retention', async (t) => {
  const ns = await newNamespace(kc, 'retention')
  const agent = new NodeAgent(kc, ns, 'complete')
  await agent.start()
  t.teardown(() => agent.stop())
  await startOperator(t, kc, settings(ns, { retentionSeconds: 1 }))
  const spec = commandSpec()
  await new KubernetesExecutor({ kubeConfig: kc, namespace: ns }).execute(spec)
  await phase(ns, spec.commandId, 'SUCCESS')
  await eventually('the CR to be deleted', () =>
    getMediaCommand(kc, ns, spec.commandId).then(() => false, (err: { code?: number }) => err.code === 404), 15_000)
  t.pass('deleted')
})

t.test('a Lease whose holder stopped renewing is taken over once it expires, by the taker\'s own clock', async (t) => {
  const ns = await newNamespace(kc, 'lease')
  let now = 1_000_000
  const elector = (identity: string) => new LeaderElector({
    api: leases, namespace: ns, name: 'ffkube-operator', identity, logger: testLogger,
    leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000, clock: () => now,
  })
  const a = elector('a')
  const b = elector('b')
  t.ok(await a.attempt(), 'a acquires the free Lease')
  t.notOk(await b.attempt(), 'b sees it held')
  now += 10_000
  t.ok(await a.attempt(), 'a renews')
  now += 14_000
  t.notOk(await b.attempt(), 'b saw the renewal just now, so the Lease runs from then')
  now += 16_000
  t.ok(await b.attempt(), 'a stopped renewing: b takes over after the duration')
  const lease = await leases.readNamespacedLease({ name: 'ffkube-operator', namespace: ns })
  t.equal(lease.spec!.holderIdentity, 'b')
  t.equal(lease.spec!.leaseTransitions, 1)
  t.equal(lease.spec!.leaseDurationSeconds, 15)
  t.notOk(await a.attempt(), 'a, back, finds b holding a fresh Lease')
  const racers = await Promise.all([elector('c'), elector('d')].map(async (e) => {
    await e.attempt() // first sight of b's Lease
    now += 16_000
    return e
  }))
  const wins = await Promise.all(racers.map((e) => e.attempt()))
  t.equal(wins.filter(Boolean).length, 1, 'of two racing for an expired Lease, the resourceVersion lets one win')
})

t.test('operator/main.ts runs from its environment, serves /metrics, and on SIGTERM releases the Lease and exits 0', async (t) => {
  const { spawn } = await import('node:child_process')
  const { createInterface } = await import('node:readline')
  const ns = await newNamespace(kc, 'main')
  const agent = new NodeAgent(kc, ns, 'complete')
  await agent.start()
  t.teardown(() => agent.stop())
  const child = spawn(process.execPath, programArgv('operator/main.ts'), {
    env: {
      PATH: process.env.PATH, KUBECONFIG: kube.kubeconfigPath, WATCH_NAMESPACE: ns, POD_NAME: 'operator-main',
      METRICS_PORT: '0', METRICS_HOST: '127.0.0.1', LOG_LEVEL: 'info', LEASE_DURATION_SECONDS: '3', LEASE_RENEW_DEADLINE_SECONDS: '2', LEASE_RETRY_PERIOD_SECONDS: '1',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
  t.teardown(() => child.kill('SIGKILL'))
  const logs: Array<Record<string, unknown>> = []
  // Waits for the process's own word that it started, or for its exit: no bound of our own, since a
  // loaded machine can take any time to load main.ts (a 30 s bound ran out once at load 26).
  const port = await new Promise<number>((resolve, reject) => {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const entry = JSON.parse(line) as Record<string, unknown>
      logs.push(entry)
      if (entry.msg === 'operator started') resolve(entry.metrics_port as number)
    })
    void exited.then((code) => reject(new Error(`operator/main.ts exited ${code} before it started: ${JSON.stringify(logs)}`)))
  })
  t.ok(logs.every((l) => l.service === 'operator'), 'pino JSON logs naming the service')

  const spec = commandSpec()
  await new KubernetesExecutor({ kubeConfig: kc, namespace: ns }).execute(spec)
  await phase(ns, spec.commandId, 'SUCCESS')
  t.ok(logs.some((l) => l.command_id === spec.commandId && l.msg === 'created Job'), 'log lines about a command carry its command_id')
  const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text()
  t.match(metrics, /ffkube_operator_jobs_total\{outcome="created"\} 1/)
  t.match(metrics, /ffkube_operator_jobs_total\{outcome="succeeded"\} 1/)
  t.match(metrics, /ffkube_operator_is_leader 1/)

  child.kill('SIGTERM')
  t.equal(await exited, 0, 'a clean exit')
  const lease = await leases.readNamespacedLease({ name: 'ffkube-operator', namespace: ns })
  t.equal(lease.spec!.holderIdentity, '', 'the Lease was handed back')
})
