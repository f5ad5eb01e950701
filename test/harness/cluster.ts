import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { KubeConfig } from '@kubernetes/client-node'
import { toolPath } from '../../api/local/tools.js'
import { backgroundLaneDone } from './background-lanes.js'
import { startKube } from './kube.js'
import { scratchDir, type Teardown } from './scratch.js'
import {
  Components,
  startControllerManager,
  startKubelet,
  startKubeProxy,
  startKubeRouter,
  startScheduler,
  type NodeSettings,
} from './cluster/components.js'
import { startContainerd } from './cluster/containerd.js'
import { corednsManifests } from './cluster/coredns.js'
import { recoverCrashedCluster, removeCrashRecord, writeCrashRecord, type CrashRecord } from './cluster/crash-record.js'
import { acquireHostLock } from './cluster/host-lock.js'
import { diffHostState, recordHostState, restoreHostState } from './cluster/host-state.js'
import { nodeImageArchive, nodeImageRef } from './cluster/images.js'
import { kubeRouterRbac } from './cluster/kube-router-rbac.js'
import { writeKubeconfig } from './cluster/kubeconfig.js'
import { addLoopbackAddresses, rejectUntranslatedServiceTraffic, removeBridge, writeCniConfig } from './cluster/network.js'
import { unmountAll } from './cluster/mounts.js'
import { createPki } from './cluster/pki.js'
import { run } from './cluster/run.js'
import { TeardownStack } from './cluster/teardown-stack.js'

/** A real single-node Kubernetes on this host (see shared notes real-node.md). */
export interface TestCluster {
  /** A /32 on lo; host servers that pods must reach bind here. */
  nodeIp: string
  nodeName: string
  /** Admin (system:masters). */
  kubeconfigPath: string
  kubeConfig(): KubeConfig
  /** Runs kubectl with the admin kubeconfig; resolves with stdout, throws with stderr. */
  kubectl(args: string[], opts?: { input?: string }): Promise<string>
  /** `ctr -n k8s.io images import`: tag images with a non-:latest tag and use IfNotPresent. */
  importImage(archivePath: string): Promise<void>
  dnsIp: string
  serviceCidr: string
  podCidr: string
  /** A static busybox image (sh, nc, wget …, user 65534) already imported, for test pods. */
  busyboxImage: string
  /** Milliseconds from the start of startCluster, for the record. */
  timings: Record<string, number>
  /** The last output of each node component (kubelet, kube-proxy …), for a failing test's message. */
  componentOutput(): string
  /** containerd stopped and started again; running containers stay (cluster/containerd.ts). */
  restartContainerd(): Promise<void>
}

/** What startCluster can be asked for. */
export interface ClusterOptions {
  /** More /32 addresses put on lo for the cluster's life, e.g. a "public" 203.0.113.1. */
  extraHostIps?: string[]
  /** Called on teardown, after the host was restored, with what still differs from before (empty when clean). */
  onTornDown?: (leftovers: string[]) => void
}

const NODE_IP = '10.250.0.1'
const NODE_NAME = 'ffkube-node'
const SERVICE_CIDR = '10.96.0.0/16'
const KUBERNETES_SERVICE_IP = '10.96.0.1'
const DNS_IP = '10.96.0.10'
const CLUSTER_CIDR = '10.244.0.0/16'
/** The first /24 the controller-manager hands out of CLUSTER_CIDR: the only node's. */
const POD_CIDR = '10.244.0.0/24'
const START_TIMEOUT_MS = 180_000

/** Polls `check` until it returns a value; fails at once when a node component has died. */
async function waitFor<T>(what: string, components: Components, check: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + START_TIMEOUT_MS
  let last: unknown
  for (;;) {
    components.assertRunning()
    try {
      const value = await check()
      if (value !== undefined) return value
    } catch (err) {
      last = err
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ''}\n${components.describe()}`)
    }
    await sleep(250)
  }
}

interface Condition {
  type: string
  status: string
}

/**
 * Starts a single-node cluster on this host: etcd and kube-apiserver on the
 * node IP, controller-manager, scheduler, containerd, kubelet, kube-proxy
 * (iptables), kube-router (NetworkPolicy only) and CoreDNS as a pod. One per
 * host: a second caller waits for the host lock. Teardown (registered on `t`,
 * and run also when startup fails midway, at the end of the test) stops it all
 * and puts back iptables, ipsets, sysctls, lo addresses and the folders the
 * kubelet creates outside its root. Should this process die before teardown,
 * the next startCluster on the host does that first (cluster/crash-record.ts).
 */
export async function startCluster(t: Teardown, opts: ClusterOptions = {}): Promise<TestCluster> {
  const started = Date.now()
  const timings: Record<string, number> = {}
  const mark = (what: string) => (timings[what] = Date.now() - started)
  const stack = new TeardownStack()
  t.teardown(() => stack.run())

  // startKube below waits for the kube lane; the node needs its images too.
  await backgroundLaneDone('node-images')
  stack.teardown(await acquireHostLock())
  mark('lock')
  await recoverCrashedCluster()
  const before = await recordHostState()
  const record: CrashRecord = { hostState: before, dirs: [] }
  await writeCrashRecord(record)
  // Registered before the restore, so it runs after it.
  stack.teardown(() => removeCrashRecord())
  stack.teardown(async () => {
    await restoreHostState(before)
    const leftovers = diffHostState(before, await recordHostState())
    opts.onTornDown?.(leftovers)
    if (leftovers.length > 0) throw new Error(`the cluster left the host changed:\n${leftovers.join('\n')}`)
  })
  await addLoopbackAddresses(stack, [NODE_IP, ...(opts.extraHostIps ?? [])])
  await rejectUntranslatedServiceTraffic(stack, SERVICE_CIDR)
  const dir = await scratchDir(stack, 'ffkube-node-')
  record.dirs.push(dir)
  await writeCrashRecord(record)
  // The kubelet's volume mounts (projected tokens, emptyDirs) and containerd's rootfs live under dir.
  stack.teardown(() => unmountAll(dir))
  stack.teardown(removeBridge)

  const pki = await createPki(dir, [NODE_IP, KUBERNETES_SERVICE_IP, '127.0.0.1'])
  const token = () => randomBytes(24).toString('hex')
  const tokens = {
    controllerManager: { token: token(), user: 'system:kube-controller-manager', groups: [] },
    scheduler: { token: token(), user: 'system:kube-scheduler', groups: [] },
    kubelet: { token: token(), user: `system:node:${NODE_NAME}`, groups: ['system:nodes'] },
    kubeProxy: { token: token(), user: 'system:kube-proxy', groups: [] },
    kubeRouter: { token: token(), user: 'kube-router', groups: [] },
  }
  const kube = await startKube(stack, {
    // Under the node folder, so a crash record's kill and cleanup cover etcd and the apiserver too.
    dir: join(dir, 'kube'),
    address: NODE_IP,
    serviceCidr: SERVICE_CIDR,
    tls: { ...pki.apiserver, caFile: pki.caFile },
    tokens: Object.values(tokens),
    authorizationMode: 'Node,RBAC',
    extraArgs: [
      `--kubelet-client-certificate=${pki.apiserverKubeletClient.certFile}`,
      `--kubelet-client-key=${pki.apiserverKubeletClient.keyFile}`,
      `--client-ca-file=${pki.caFile}`,
      // The node name resolves nowhere; its InternalIP is the node IP.
      '--kubelet-preferred-address-types=InternalIP',
    ],
  })
  mark('apiserver')
  const kubeconfigs = {} as NodeSettings['kubeconfigs']
  for (const [name, entry] of Object.entries(tokens) as [keyof typeof tokens, { token: string }][]) {
    kubeconfigs[name] = await writeKubeconfig(join(dir, `${name}.kubeconfig`), kube.server, pki.caFile, entry.token)
  }

  const [pauseImage, corednsImage, busyboxImage] = await Promise.all([nodeImageRef('pause'), nodeImageRef('coredns'), nodeImageRef('busybox')])
  const cniConfDir = await writeCniConfig(join(dir, 'cni'), POD_CIDR)
  const containerd = await startContainerd(stack, join(dir, 'containerd'), { sandboxImage: pauseImage, cniConfDir })
  for (const image of ['pause', 'coredns', 'busybox'] as const) await containerd.importImage(nodeImageArchive(image))
  mark('containerd')

  const settings: NodeSettings = {
    dir,
    nodeName: NODE_NAME,
    nodeIp: NODE_IP,
    podCidr: POD_CIDR,
    clusterCidr: CLUSTER_CIDR,
    serviceCidr: SERVICE_CIDR,
    dnsIp: DNS_IP,
    caFile: pki.caFile,
    caKeyFile: pki.caKeyFile,
    saKeyFile: join(kube.dir, 'sa.key'),
    kubeconfigs,
    containerdSocket: containerd.socket,
  }
  const components = new Components(stack)
  startControllerManager(components, settings)
  startScheduler(components, settings)
  await startKubelet(components, settings)
  await startKubeProxy(components, settings)

  const kubectl = (args: string[], kopts: { input?: string } = {}) => run(toolPath('kubectl'), ['--kubeconfig', kube.kubeconfigPath, ...args], kopts)
  const getJson = async <T>(args: string[]): Promise<T> => JSON.parse(await kubectl(['get', ...args, '-o', 'json'])) as T

  await waitFor('the node to be Ready', components, async () => {
    const node = await getJson<{ spec: { podCIDR?: string }; status: { conditions?: Condition[] } }>(['node', NODE_NAME])
    const ready = node.status.conditions?.find((c) => c.type === 'Ready')?.status === 'True'
    if (ready && node.spec.podCIDR !== POD_CIDR) throw new Error(`node podCIDR ${node.spec.podCIDR} is not the CNI's ${POD_CIDR}`)
    return ready ? true : undefined
  })
  mark('nodeReady')
  // kube-router looks its node up once at start and exits when it is not there yet.
  await kubectl(['apply', '-f', '-'], { input: JSON.stringify(kubeRouterRbac(tokens.kubeRouter.user)) })
  startKubeRouter(components, settings)
  await kubectl(['apply', '-f', '-'], { input: JSON.stringify(corednsManifests(corednsImage, DNS_IP)) })
  await waitFor('the default service account', components, async () => ((await kubectl(['get', 'serviceaccount', 'default', '-n', 'default', '-o', 'name'])) ? true : undefined))
  mark('defaultServiceAccount')
  await waitFor('CoreDNS to be ready', components, async () => {
    const deployment = await getJson<{ status: { readyReplicas?: number } }>(['deployment', 'coredns', '-n', 'kube-system'])
    return (deployment.status.readyReplicas ?? 0) >= 1 ? true : undefined
  })
  mark('dnsReady')

  return {
    nodeIp: NODE_IP,
    nodeName: NODE_NAME,
    kubeconfigPath: kube.kubeconfigPath,
    kubeConfig: kube.kubeConfig,
    kubectl,
    importImage: (archivePath) => containerd.importImage(archivePath),
    dnsIp: DNS_IP,
    serviceCidr: SERVICE_CIDR,
    podCidr: POD_CIDR,
    busyboxImage,
    timings,
    componentOutput: () => components.describe(),
    restartContainerd: () => containerd.restart(),
  }
}
