import t from 'tap'
import { KubernetesExecutor } from '../../api/executors/kubernetes-executor.js'
import { serveMetrics } from '../../operator/metrics.js'
import { eventually } from '../harness/eventually.js'
import { startKube } from '../harness/kube.js'
import { commandSpec } from './fixtures.js'
import { installCrd, newNamespace, settings, startOperator } from './kube-setup.js'
import { NodeAgent } from './node-agent.js'

const kube = await startKube(t)
const kc = kube.kubeConfig()
await installCrd(kc)

t.test('the operator serves ffkube_runner_pods by phase from its pod cache, every phase always present', async (t) => {
  const ns = await newNamespace(kc, 'pods-metric')
  const agent = new NodeAgent(kc, ns, 'hold')
  await agent.start()
  t.teardown(() => agent.stop())
  const operator = await startOperator(t, kc, settings(ns))
  const server = await serveMetrics(operator.metrics, 0, '127.0.0.1')
  t.teardown(() => new Promise((resolve) => server.close(resolve)))
  const port = (server.address() as { port: number }).port
  const pods = async (): Promise<Record<string, number>> => {
    const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text()
    return Object.fromEntries([...text.matchAll(/^ffkube_runner_pods\{phase="(\w+)"\} (\d+)$/gm)].map((m) => [m[1]!, Number(m[2])]))
  }

  t.same(await pods(), { Pending: 0, Running: 0, Succeeded: 0, Failed: 0, Unknown: 0 }, 'no runner pod yet: every phase at 0')
  t.match(await (await fetch(`http://127.0.0.1:${port}/metrics`)).text(), /^# TYPE ffkube_runner_pods gauge$/m)

  await eventually('leadership', () => operator.isLeader)
  const spec = commandSpec()
  agent.expect(spec.commandId, 'running')
  await new KubernetesExecutor({ kubeConfig: kc, namespace: ns }).execute(spec)
  await eventually('one Running pod in the metric', async () => (await pods()).Running === 1)
  await agent.act(spec.commandId, 'complete')
  const done = await eventually('the pod Succeeded in the metric', async () => {
    const now = await pods()
    return now.Succeeded === 1 ? now : undefined
  })
  t.same(done, { Pending: 0, Running: 0, Succeeded: 1, Failed: 0, Unknown: 0 }, 'the same pod moved from Running to Succeeded')
})
