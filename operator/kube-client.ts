/**
 * Connection reuse for @kubernetes/client-node 2.0.1, whose KubeConfig builds a
 * new undici Agent for every request it authenticates (config.js
 * applySecurityAuthentication → createDispatcher, also for each watch): every
 * API call then pays a fresh TCP and TLS handshake, which on the harness costs
 * more than the call itself, and leaves a pool behind. This gives the
 * KubeConfig one dispatcher per distinct server and TLS identity (CA, client
 * certificate and key), so rotated client certificates still get a new one.
 * Tokens travel in headers, untouched. 1.4.0 had the same flaw with https
 * Agents (createAgent); test/operator/kube-connections.test.ts counts the
 * connections, so an upgrade that breaks this or makes it needless shows there.
 */
import type { AgentOptions } from 'node:https'
import type { Cluster, KubeConfig } from '@kubernetes/client-node'

type CreateDispatcher = (cluster: Cluster | null, agentOptions: AgentOptions) => unknown

const patched = new WeakSet<KubeConfig>()

/** Makes `kc` reuse connections; idempotent. Returns kc. */
export function reuseConnections(kc: KubeConfig): KubeConfig {
  if (patched.has(kc)) return kc
  // createDispatcher is private in the typings; it is the one seam the library offers.
  const target = kc as unknown as { createDispatcher: CreateDispatcher }
  if (typeof target.createDispatcher !== 'function') {
    throw new Error('@kubernetes/client-node has no KubeConfig.createDispatcher any more: operator/kube-client.ts needs another seam')
  }
  const original = target.createDispatcher.bind(kc)
  const dispatchers = new Map<string, unknown>()
  target.createDispatcher = (cluster, agentOptions) => {
    const options = kc.createDispatcherOptions(cluster, agentOptions)
    // Only plain agents are shared; proxies and the global dispatcher stay as the library makes them.
    if (options.type !== 'agent') return original(cluster, agentOptions)
    const { ca, cert, key, pfx, passphrase, rejectUnauthorized, servername } = options.connect
    const identity = JSON.stringify([cluster?.server, ca, cert, key, pfx, passphrase, rejectUnauthorized, servername].map((v) => v?.toString()))
    let dispatcher = dispatchers.get(identity)
    if (dispatcher === undefined) {
      dispatcher = original(cluster, agentOptions)
      dispatchers.set(identity, dispatcher)
    }
    return dispatcher
  }
  patched.add(kc)
  return kc
}
