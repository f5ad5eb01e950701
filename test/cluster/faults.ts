/**
 * The faults of the cluster lane's fault set (issue 29), each applied while a
 * command of its batch waits at an input gate, so that command is in flight
 * through the fault: the gate is opened as the fault happens. `recovered`
 * waits until the release serves again, so the next batch is submitted to a
 * whole service.
 */
import { get as httpGet } from 'node:http'
import type { V1PodList } from '@kubernetes/client-node'
import { LABEL_COMMAND_ID } from '../../contracts/media-command.js'
import { eventually } from '../harness/eventually.js'
import { DEPLOYMENTS, NAMESPACE, RELEASE, RUNNER_NAMESPACE, type Release } from './release.js'

export interface FaultContext {
  release: Release
  /** The command held at the gate: its runner pod is in its fetch phase. */
  held: string
  /** Lets the held command's input go: served, or cut off. */
  openGate(how?: 'serve' | 'drop'): void
}

export interface Fault {
  name: string
  apply(context: FaultContext): Promise<void>
}

const TIMEOUT = 180_000

async function podNames(release: Release, namespace: string, selector: string): Promise<string[]> {
  const pods = await release.kubectlJson<V1PodList>(['-n', namespace, 'get', 'pods', '-l', selector])
  return pods.items.map((p) => p.metadata!.name!)
}

/** Deletes the pods of one component of the release, without waiting for them to go. */
async function deleteComponent(release: Release, component: string): Promise<void> {
  await release.kubectl(['-n', NAMESPACE, 'delete', 'pod', '-l', `app.kubernetes.io/component=${component}`, '--wait=false'])
}

async function leaseHolder(release: Release): Promise<string> {
  return (await release.kubectl(['-n', RUNNER_NAMESPACE, 'get', 'lease', 'ffkube-operator', '-o', 'jsonpath={.spec.holderIdentity}'])).trim()
}

export const FAULTS: Fault[] = [
  {
    name: 'the API pod deleted',
    apply: async ({ release, openGate }) => {
      await deleteComponent(release, 'api')
      openGate()
    },
  },
  {
    name: 'the worker pod deleted',
    apply: async ({ release, openGate }) => {
      await deleteComponent(release, 'worker')
      openGate()
    },
  },
  {
    name: 'the leading operator pod deleted',
    apply: async ({ release, openGate }) => {
      const leader = await leaseHolder(release)
      await release.kubectl(['-n', NAMESPACE, 'delete', 'pod', leader, '--wait=false'])
      openGate()
      await eventually('another operator replica to take the Lease', async () => {
        const holder = await leaseHolder(release)
        return holder !== '' && holder !== leader
      }, TIMEOUT)
    },
  },
  {
    name: 'a runner pod deleted',
    apply: async ({ release, held, openGate }) => {
      for (const pod of await podNames(release, RUNNER_NAMESPACE, `${LABEL_COMMAND_ID}=${held}`)) {
        await release.kubectl(['-n', RUNNER_NAMESPACE, 'delete', 'pod', pod, '--wait=false'])
      }
      // Cut the input only once the command has ended: cut earlier, the runner (still in its grace
      // period) would report the input unreachable, a second fault racing the first.
      await release.client.waitForCommand(held, TIMEOUT)
      openGate('drop')
    },
  },
  {
    name: 'NATS restarted',
    apply: async ({ release, openGate }) => {
      openGate()
      await release.nats.restart!()
    },
  },
  {
    name: 'the MongoDB-wire server restarted',
    apply: async ({ release, openGate }) => {
      openGate()
      await release.mongo.restart!()
    },
  },
]

/**
 * containerd, the node's only runtime, stopped and started again while the
 * held command's pod runs: its containers stay with their shims and the
 * kubelet reconnects, so the held command goes on. Not in FAULTS (the lane's
 * set) until it has shown itself deterministic there; bench/chaos.ts runs it.
 */
export const CONTAINERD_RESTART: Fault = {
  name: 'containerd restarted',
  apply: async ({ release, openGate }) => {
    await release.cluster.restartContainerd()
    openGate()
  },
}

interface PodReadiness {
  items: Array<{
    metadata: { name: string; deletionTimestamp?: string }
    status?: { phase?: string; conditions?: Array<{ type: string; status: string }>; containerStatuses?: Array<{ restartCount: number; state?: Record<string, { reason?: string }> }> }
  }>
}

/** A pod as the timeout message shows it: name, phase, terminating, restarts, a waiting reason. */
function describePod(pod: PodReadiness['items'][number]): string {
  const container = pod.status?.containerStatuses?.[0]
  const waiting = container?.state?.waiting?.reason
  return [pod.metadata.name, pod.status?.phase, pod.metadata.deletionTimestamp ? 'terminating' : '', container ? `restarts ${container.restartCount}` : '', waiting ?? '']
    .filter((part) => part).join(' ')
}

/**
 * Every Deployment of the release has as many ready pods as it asks for, none
 * of them being deleted, and the API answers a command listing through its Service. On
 * timeout the error says what was last seen of each component.
 */
/** Answers in a row the API Service must give on new connections before a fault counts as recovered. */
const SERVICE_CHECKS = 20

/** GET on a connection of its own (no keep-alive), so the Service picks an endpoint for it; its status, or 0. */
function freshGet(url: string, apiKey: string): Promise<number> {
  return new Promise((resolve) => {
    const request = httpGet(url, { agent: false, headers: { 'x-api-key': apiKey } }, (response) => {
      response.resume()
      response.on('end', () => resolve(response.statusCode ?? 0))
    })
    request.on('error', () => resolve(0))
  })
}

export async function recovered(release: Release, timeoutMs = TIMEOUT): Promise<void> {
  let seen = ''
  try {
    await eventually('every Deployment of the release serving again', async () => {
      const states: string[] = []
      let whole = true
      for (const deployment of DEPLOYMENTS) {
        const component = deployment.slice(`${RELEASE}-`.length)
        const want = await release.kubectlJson<{ spec: { replicas: number } }>(['-n', NAMESPACE, 'get', 'deploy', deployment])
        const pods = await release.kubectlJson<PodReadiness>(['-n', NAMESPACE, 'get', 'pods', '-l', `app.kubernetes.io/component=${component}`])
        const ready = pods.items.filter((p) => !p.metadata.deletionTimestamp && p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'))
        states.push(`${component}: ${ready.length}/${want.spec.replicas} ready (${pods.items.map(describePod).join('; ')})`)
        if (ready.length < want.spec.replicas || ready.length !== pods.items.length) whole = false
      }
      seen = states.join(', ')
      // An API route, not /readyz: every role answers /readyz. And not once: right after the API
      // pod is replaced, kube-proxy can still send part of the Service's new connections to the
      // old pod's address. Each try a new connection, so each is balanced afresh; until kube-proxy
      // has dropped the old address, some of them land there. (The bodiless 404s the lane once saw
      // were not from a pod: untranslated connections left by the host's default route, which the
      // test node now refuses — rejectUntranslatedServiceTraffic.)
      if (!whole) return false
      for (let i = 0; i < SERVICE_CHECKS; i++) {
        if ((await freshGet(`${release.baseUrl}/api/v1/commands?limit=1`, release.apiKey)) !== 200) return false
      }
      return true
    }, timeoutMs)
  } catch (err) {
    throw new Error(`${(err as Error).message}; last seen: ${seen}`)
  }
}
