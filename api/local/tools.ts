import { homedir } from 'node:os'
import { join } from 'node:path'

/** The folder scripts/provision.sh fills; overridable for CI caches and tests. */
export function toolCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  return env.FFKUBE_CACHE ?? join(homedir(), '.cache', 'ffkube')
}

/** Names of the binaries scripts/provision.sh places in the cache's bin/. */
export type ToolName =
  | 'ffmpeg'
  | 'ffprobe'
  | 'yt-dlp'
  | 'nats-server'
  | 'ferretdb'
  // The managed store of local mode and the tests; MinIO plays a customer's bucket in the tests.
  | 'versitygw'
  | 'minio'
  | 'etcd'
  | 'kube-apiserver'
  // The real single node of test/harness/cluster.ts.
  | 'kubelet'
  | 'kube-controller-manager'
  | 'kube-scheduler'
  | 'kube-proxy'
  | 'kubectl'
  | 'containerd'
  | 'ctr'
  | 'coredns'
  | 'kube-router'
  | 'schemathesis'
  // Debian's Chromium, for the console's browser test.
  | 'chromium'

/** Absolute path of a provisioned tool. */
export function toolPath(name: ToolName, env: NodeJS.ProcessEnv = process.env): string {
  return join(toolCacheDir(env), 'bin', name)
}
