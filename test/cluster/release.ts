/**
 * ffkube installed for real on the single-node cluster (test/harness/cluster.ts):
 * both images imported into containerd, MongoDB-wire, NATS JetStream and versitygw
 * (S3) on the node IP, `helm install` of charts/ffkube with NetworkPolicies on, all
 * four Deployments ready, and a Business account made with the admin CLI inside
 * the api pod. Shared by the cluster lane (test/cluster/lane.test.ts) and the
 * real-node benchmark (bench/real-node.ts).
 *
 * Two addresses matter. The node IP (10.250.0.x, a private address) carries the
 * servers the chart is configured with; runner pods may reach it only on the
 * NATS and S3 ports (runners.networkPolicy.extraEgress). PUBLIC_IP stands for
 * the internet: it lies outside every CIDR the runner NetworkPolicy denies, so
 * inputs, the webhook receiver and a customer's storage are served there.
 */
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { KubeConfig } from '@kubernetes/client-node'
import { Client } from '../e2e/service.js'
import { startCluster, type TestCluster } from '../harness/cluster.js'
import { eventually } from '../harness/eventually.js'
import { CHART_DIR, startHelm } from '../harness/helm.js'
import { startMongo, type TestMongo } from '../harness/mongo.js'
import { startNats, type TestNats } from '../harness/nats.js'
import { startS3, type TestS3 } from '../harness/s3.js'
import { scratchDir, type Teardown } from '../harness/scratch.js'

export const RELEASE = 'ffkube'
export const NAMESPACE = 'ffkube'
export const RUNNER_NAMESPACE = 'ffkube-runners'
/**
 * "The internet" of the lane: a TEST-NET-3 address on the host's loopback. The
 * runner NetworkPolicy allows it (it is in none of deniedCidrs); the in-process
 * guard would refuse it (a documentation range), which is one reason the lane
 * runs with config.allowPrivateNetworks (see laneValues).
 */
export const PUBLIC_IP = '203.0.113.10'
export const DEPLOYMENTS = ['api', 'worker', 'webhook-deliverer', 'operator'].map((c) => `${RELEASE}-${c}`)

/** dist/images.json as the image build writes it. */
export interface ImageRefs {
  service: { ref: string; archive: string }
  runner: { ref: string; archive: string }
}

export async function readImages(path = process.env.FFKUBE_IMAGES ?? 'dist/images.json'): Promise<ImageRefs> {
  try {
    return JSON.parse(await readFile(path, 'utf8')) as ImageRefs
  } catch (err) {
    throw new Error(`no image list at ${path} (build the images first: see README "Images"): ${String(err)}`)
  }
}

/** `registry/repo:tag` → the chart's repository and tag. */
export function splitRef(ref: string): { repository: string; tag: string } {
  const at = ref.lastIndexOf(':')
  if (at <= ref.lastIndexOf('/')) throw new Error(`image ref ${ref} has no tag`)
  return { repository: ref.slice(0, at), tag: ref.slice(at + 1) }
}

function portOf(url: string): number {
  const port = Number(new URL(url).port)
  if (!port) throw new Error(`${url} names no port`)
  return port
}

/** What the lane's servers and cluster decide in the chart's values. */
export interface LaneSettings {
  images: ImageRefs
  nodeIp: string
  mongo: TestMongo
  nats: TestNats
  s3: TestS3
  /** Extra runner egress rules the cluster's DNS needs (see dnsEgress). */
  dnsEgress: unknown[]
}

/**
 * The values the lane installs with. allowPrivateNetworks is on: a storage
 * destination's endpoint must be https on a host name unless it is, and the
 * lane's S3 servers speak http; inputs and webhooks use PUBLIC_IP, which the guard
 * counts as reserved. So in this lane the NetworkPolicy is the runner's only
 * barrier, which is what its forbidden-address test proves at the packet level.
 */
export function laneValues(s: LaneSettings): Record<string, unknown> {
  const service = splitRef(s.images.service.ref)
  const runner = splitRef(s.images.runner.ref)
  const small = { requests: { cpu: '50m', memory: '128Mi' }, limits: { memory: '512Mi' } }
  return {
    image: { ...service, pullPolicy: 'IfNotPresent' },
    config: {
      allowPrivateNetworks: true,
      mongodb: { database: s.mongo.dbName },
      nats: { url: s.nats.url },
      s3: { endpoint: s.s3.endpoint, bucket: s.s3.bucket, region: s.s3.region, forcePathStyle: true },
      rateLimits: { free: 0, trial: 0, growth: 0, business: 0 },
      // The lane's account is Business; a cap of 100 output files (5,000 by default) lets its
      // sequence that overflows the cap stop after ~100 small files instead of 5,000.
      extraEnv: [{ name: 'COMMAND_MAX_OUTPUT_FILES_BUSINESS', value: '100' }],
    },
    secrets: { mongodbUrl: s.mongo.url, s3AccessKeyId: s.s3.accessKeyId, s3SecretAccessKey: s.s3.secretAccessKey },
    api: { replicas: 1, resources: small },
    worker: { resources: { requests: { cpu: '50m', memory: '128Mi', 'ephemeral-storage': '100Mi' }, limits: { memory: '1Gi', 'ephemeral-storage': '2Gi' } }, dataSizeLimit: '1Gi' },
    webhookDeliverer: { resources: small },
    // Two replicas: one leads, the other takes over when the leader's pod goes.
    operator: { replicas: 2, resources: small },
    runners: {
      image: { ...runner, pullPolicy: 'IfNotPresent' },
      // Small requests so several runner pods fit the 2-core node at once.
      resources: { requests: { cpu: '100m', memory: '128Mi', 'ephemeral-storage': '100Mi' }, limits: { cpu: '2', memory: '1Gi', 'ephemeral-storage': '2Gi' } },
      workDirSizeLimit: '1Gi',
      // No pods created ahead: the lane checks each command's own Job (its deadline is the command's limit,
      // its pods come and go with it). test/cluster/warm-pods.test.ts installs with warm pods.
      warmPods: { count: 0 },
      // An input the NetworkPolicy drops would otherwise hang in connect() for the default 600 s.
      env: { FFKUBE_INPUT_TIMEOUT_SECONDS: '30' },
      networkPolicy: {
        enabled: true,
        extraEgress: [
          {
            to: [{ ipBlock: { cidr: `${s.nodeIp}/32` } }],
            ports: [{ protocol: 'TCP', port: portOf(s.nats.url) }, { protocol: 'TCP', port: portOf(s.s3.endpoint) }],
          },
          ...s.dnsEgress,
        ],
      },
    },
  }
}

interface EndpointSliceList {
  items: Array<{ endpoints?: Array<{ addresses: string[]; targetRef?: { kind?: string } }> }>
}

/**
 * The chart lets runner pods reach DNS pods by label. When the cluster's DNS
 * answers from an address that is not a pod (CoreDNS on the host), that rule
 * matches nothing, so the lane allows those addresses on port 53 explicitly.
 */
async function dnsEgress(cluster: TestCluster): Promise<unknown[]> {
  const slices = JSON.parse(await cluster.kubectl(['-n', 'kube-system', 'get', 'endpointslices', '-l', 'kubernetes.io/service-name=kube-dns', '-o', 'json'])) as EndpointSliceList
  const hostAddresses = slices.items.flatMap((s) => s.endpoints ?? []).filter((e) => e.targetRef?.kind !== 'Pod').flatMap((e) => e.addresses)
  if (hostAddresses.length === 0) return []
  return [{
    to: hostAddresses.map((a) => ({ ipBlock: { cidr: `${a}/32` } })),
    ports: [{ protocol: 'UDP', port: 53 }, { protocol: 'TCP', port: 53 }],
  }]
}

export interface Release {
  cluster: TestCluster
  kc: KubeConfig
  mongo: TestMongo
  nats: TestNats
  s3: TestS3
  images: ImageRefs
  /** The API through its Service's ClusterIP (kube-proxy routes the host's own traffic). */
  baseUrl: string
  apiKey: string
  accountId: string
  client: Client
  values: Record<string, unknown>
  /** kubectl against the cluster; resolves with stdout. */
  kubectl(args: string[], input?: string): Promise<string>
  kubectlJson<T>(args: string[]): Promise<T>
}

const RESTRICTED_NAMESPACE = (name: string) => JSON.stringify({
  apiVersion: 'v1',
  kind: 'Namespace',
  metadata: { name, labels: { 'pod-security.kubernetes.io/enforce': 'restricted', 'pod-security.kubernetes.io/enforce-version': 'latest' } },
})

/** What a caller may change in the lane's install. */
export interface ReleaseOptions {
  /** Edits the chart's values before the install (e.g. a bench's concurrency limits). */
  values?: (values: Record<string, unknown>) => void
}

/** Starts everything and installs the chart; everything is torn down with `t`. */
export async function installRelease(t: Teardown, log: (line: string) => void = () => {}, options: ReleaseOptions = {}): Promise<Release> {
  const images = await readImages()
  const cluster = await startCluster(t, { extraHostIps: [PUBLIC_IP] })
  const kubectl = (args: string[], input?: string) => cluster.kubectl(args, input === undefined ? {} : { input })
  const kubectlJson = async <T>(args: string[]) => JSON.parse(await kubectl([...args, '-o', 'json'])) as T
  log(`cluster up: node ${cluster.nodeIp}`)
  await Promise.all([cluster.importImage(images.service.archive), cluster.importImage(images.runner.archive)])
  log('images imported')
  const host = cluster.nodeIp
  const [mongo, nats, s3] = await Promise.all([startMongo(t, { host }), startNats(t, { host }), startS3(t, { host })])
  const values = laneValues({ images, nodeIp: host, mongo, nats, s3, dnsEgress: await dnsEgress(cluster) })
  options.values?.(values)
  const dir = await scratchDir(t, 'ffkube-lane-')
  const valuesFile = join(dir, 'values.json')
  await writeFile(valuesFile, JSON.stringify(values, null, 2))

  // The release namespace enforces Pod Security restricted too: the service pods must pass it.
  await kubectl(['apply', '-f', '-'], RESTRICTED_NAMESPACE(NAMESPACE))
  const helm = await startHelm(t)
  await helm.run([
    'install', RELEASE, CHART_DIR, '--namespace', NAMESPACE, '--kubeconfig', cluster.kubeconfigPath,
    '--values', valuesFile, '--wait', '--timeout', '6m',
  ])
  for (const deployment of DEPLOYMENTS) await kubectl(['-n', NAMESPACE, 'rollout', 'status', `deploy/${deployment}`, '--timeout=5m'])
  log('helm install done, Deployments ready')

  const clusterIp = (await kubectl(['-n', NAMESPACE, 'get', 'svc', `${RELEASE}-api`, '-o', 'jsonpath={.spec.clusterIP}'])).trim()
  const baseUrl = `http://${clusterIp}:80`
  await eventually(`the API at ${baseUrl} to answer /readyz`, async () => (await fetch(`${baseUrl}/readyz`)).ok, 120_000)
  const created = JSON.parse(await kubectl([
    '-n', NAMESPACE, 'exec', `deploy/${RELEASE}-api`, '--',
    'node', 'dist/api/admin/cli.js', 'create-account', '--plan', 'business', '--name', 'cluster lane',
  ])) as { account_id: string; api_key: string }
  const client = new Client({ baseUrl, apiKey: created.api_key })
  return {
    cluster, kc: cluster.kubeConfig(), mongo, nats, s3, images, baseUrl, apiKey: created.api_key, accountId: created.account_id,
    client, values, kubectl, kubectlJson,
  }
}
