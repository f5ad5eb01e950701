/**
 * Connection reuse for @kubernetes/client-node 1.4.0, whose KubeConfig builds a
 * new https.Agent for every request (config.js createAgent): every API call
 * then pays a fresh TCP and TLS handshake, which on the harness costs more than
 * the call itself. This gives the KubeConfig one keep-alive agent per distinct
 * TLS identity (CA, client certificate and key), so rotated client
 * certificates still get a new agent. Tokens travel in headers, untouched.
 */
import { Agent, type AgentOptions } from 'node:https'
import type { KubeConfig } from '@kubernetes/client-node'

const patched = new WeakSet<KubeConfig>()

/** Makes `kc` reuse connections; idempotent. Returns kc. */
export function reuseConnections(kc: KubeConfig): KubeConfig {
  if (patched.has(kc)) return kc
  // createAgent is private in the typings; this is the one seam the library offers.
  const target = kc as unknown as { createAgent: (cluster: { proxyUrl?: string } | null, options: AgentOptions) => unknown }
  const original = target.createAgent.bind(kc)
  const agents = new Map<string, unknown>()
  target.createAgent = (cluster, options) => {
    if (cluster?.proxyUrl) return original(cluster, options)
    const key = JSON.stringify([options.ca, options.cert, options.key, options.pfx, options.rejectUnauthorized, options.servername].map((v) => v?.toString()))
    let agent = agents.get(key)
    if (!agent) {
      const built = original(cluster, options)
      // Only plain https agents are replaced; anything else (http, proxies) stays as the library made it.
      agent = built instanceof Agent ? new Agent({ ...options, keepAlive: true }) : built
      agents.set(key, agent)
    }
    return agent
  }
  patched.add(kc)
  return kc
}
