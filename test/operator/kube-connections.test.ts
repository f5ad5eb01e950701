/**
 * What the operator relies on in @kubernetes/client-node 2.x's transport,
 * against a real kube-apiserver: API calls share connections once
 * reuseConnections is applied (and not without it, so an upgrade that fixes the
 * library shows the patch can go), and an informer on a collection that stays
 * quiet past the library's 30 s watch timeout renews its watch without counting
 * a failure.
 */
import { createServer, connect, type Socket } from 'node:net'
import t from 'tap'
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node'
import { reuseConnections } from '../../operator/kube-client.js'
import { Informer } from '../../operator/watch.js'
import { startKube } from '../harness/kube.js'
import { newNamespace, testLogger } from './kube-setup.js'

const kube = await startKube(t)
const apiserver = new URL(kube.server)

/** A TCP relay in front of the apiserver that counts the connections clients open. */
async function countingRelay(): Promise<{ server: string; connections: () => number }> {
  let connections = 0
  const sockets = new Set<Socket>()
  const relay = createServer((client) => {
    connections++
    const upstream = connect(Number(apiserver.port), apiserver.hostname)
    for (const socket of [client, upstream]) {
      sockets.add(socket)
      socket.on('error', () => socket.destroy())
      socket.on('close', () => sockets.delete(socket))
    }
    client.pipe(upstream).pipe(client)
  })
  await new Promise<void>((resolve) => relay.listen(0, apiserver.hostname, resolve))
  t.teardown(() => {
    for (const socket of sockets) socket.destroy()
    relay.close()
  })
  const address = relay.address() as { port: number }
  return { server: `https://${apiserver.hostname}:${address.port}`, connections: () => connections }
}

/** The harness's KubeConfig (its CA and token), pointed at `server`. */
function kubeConfigFor(server: string): KubeConfig {
  const base = kube.kubeConfig()
  const kc = new KubeConfig()
  kc.loadFromOptions({
    clusters: base.clusters.map((cluster) => ({ ...cluster, server })),
    users: base.users,
    contexts: base.contexts,
    currentContext: base.currentContext,
  })
  return kc
}

const CALLS = 20

t.test('API calls share connections once reuseConnections is applied, and not without it', async (t) => {
  const ns = await newNamespace(kube.kubeConfig(), 'conns')
  const calls = async (kc: KubeConfig) => {
    const core = kc.makeApiClient(CoreV1Api)
    for (let i = 0; i < CALLS; i++) await core.listNamespacedConfigMap({ namespace: ns })
  }
  const reused = await countingRelay()
  await calls(reuseConnections(kubeConfigFor(reused.server)))
  t.ok(reused.connections() >= 1 && reused.connections() <= 2, `${CALLS} calls opened ${reused.connections()} connections`)
  // The library as published: one connection per call. If this fails, client-node reuses connections by itself
  // and operator/kube-client.ts can go.
  const plain = await countingRelay()
  await calls(kubeConfigFor(plain.server))
  t.equal(plain.connections(), CALLS, 'without it every call opens its own connection')
})

t.test('a watch quiet past the library’s 30 s timeout is renewed without a reconnect', async (t) => {
  const kc = reuseConnections(kube.kubeConfig())
  const ns = await newNamespace(kc, 'quiet')
  const core = kc.makeApiClient(CoreV1Api)
  const informer = new Informer({
    name: 'quiet-configmaps', kubeConfig: kc, logger: testLogger,
    path: `/api/v1/namespaces/${ns}/configmaps`,
    // A selector nothing matches: the apiserver sends no event at all.
    labelSelector: 'ffkube.io/never=set',
    list: () => core.listNamespacedConfigMap({ namespace: ns, labelSelector: 'ffkube.io/never=set' }),
  })
  const reconnects: unknown[] = []
  informer.on('reconnect', (info) => reconnects.push(info))
  let connects = 0
  const renewed = new Promise<void>((resolve) => informer.on('connect', () => ++connects === 2 && resolve()))
  await informer.start()
  t.teardown(() => informer.stop())
  await renewed
  t.same(reconnects, [], 'the renewal came with no reconnect (no failure, no back-off)')
})
