/** Read access to the informers' caches, and the one read that falls back to the apiserver. */
import type { BatchV1Api, V1Job, V1Pod } from '@kubernetes/client-node'
import type { MediaCommand } from '../contracts/media-command.js'
import { jobNameFor } from './job-builder.js'
import { isNotFound } from './kube-errors.js'

export interface Caches {
  mediaCommand(namespace: string, name: string): MediaCommand | undefined
  job(namespace: string, name: string): V1Job | undefined
  podsOf(namespace: string, commandId: string): V1Pod[]
}

/** The command's Job from the cache; a cache miss is confirmed with a GET, as a Job just created may not be cached yet. */
export async function findJob(caches: Caches, batch: BatchV1Api, mc: MediaCommand): Promise<V1Job | undefined> {
  const namespace = mc.metadata.namespace!
  const name = mc.status?.jobName ?? jobNameFor(mc.metadata.name)
  const cached = caches.job(namespace, name)
  if (cached) return cached
  try {
    return await batch.readNamespacedJob({ name, namespace })
  } catch (err) {
    if (isNotFound(err)) return undefined
    throw err
  }
}

/** Whether `job` is `mc`'s own, not the Job of an earlier MediaCommand of the same name. */
export function ownedBy(job: V1Job, mc: MediaCommand): boolean {
  return job.metadata?.ownerReferences?.some((r) => r.controller && r.uid === mc.metadata.uid) ?? false
}
