/**
 * What the throughput bench watches of a namespace's pods while a burst runs:
 * how many ran at once, how many waited unschedulable, and when each pod
 * (by a key: a label or its name) first showed a terminal phase.
 */
import { Watch, type KubeConfig, type V1Pod } from '@kubernetes/client-node'

export interface PodCensus {
  /** Pods seen in phase Running at the same time, at most. */
  readonly maxRunning: number
  /** Pods the scheduler reported Unschedulable at least once. */
  readonly unschedulable: number
  /** Date.now() when each key's pod was first seen Succeeded or Failed, with the phase. */
  readonly ended: Map<string, { at: number; phase: string }>
  stop(): void
}

export async function watchPods(kc: KubeConfig, namespace: string, keyOf: (pod: V1Pod) => string | undefined, labelSelector?: string): Promise<PodCensus> {
  const running = new Set<string>()
  const unschedulable = new Set<string>()
  const ended = new Map<string, { at: number; phase: string }>()
  let maxRunning = 0
  const query: Record<string, string> = labelSelector ? { labelSelector } : {}
  const controller = await new Watch(kc).watch(`/api/v1/namespaces/${namespace}/pods`, query, (type, pod: V1Pod) => {
    const name = pod.metadata?.name
    if (!name) return
    const phase = pod.status?.phase
    if (type !== 'DELETED' && phase === 'Running') running.add(name)
    else running.delete(name)
    maxRunning = Math.max(maxRunning, running.size)
    if (pod.status?.conditions?.some((c) => c.type === 'PodScheduled' && c.reason === 'Unschedulable')) unschedulable.add(name)
    const key = keyOf(pod)
    if (key !== undefined && (phase === 'Succeeded' || phase === 'Failed') && !ended.has(key)) ended.set(key, { at: Date.now(), phase })
  }, () => {})
  return {
    get maxRunning() {
      return maxRunning
    },
    get unschedulable() {
      return unschedulable.size
    },
    ended,
    stop: () => controller.abort(),
  }
}
