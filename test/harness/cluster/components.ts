import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { ChildServer } from '../../../api/local/child-server.js'
import { toolCacheDir, toolPath } from '../../../api/local/tools.js'
import type { Teardown } from '../scratch.js'

/** The node's processes, for error messages when it does not come up. */
export class Components {
  readonly #servers: ChildServer[] = []

  constructor(private readonly t: Teardown) {}

  /** Starts one component; stopped on teardown. */
  start(name: Parameters<typeof toolPath>[0], args: string[]): ChildServer {
    // conntrack, iptables and ipset live in /usr/sbin; the shim in the cache's bin/.
    const env = { ...process.env, PATH: `${join(toolCacheDir(), 'bin')}:/usr/sbin:/sbin:${process.env.PATH ?? ''}` }
    const server = ChildServer.start({ name, command: toolPath(name), args, env })
    this.#servers.push(server)
    this.t.teardown(() => server.stop())
    return server
  }

  /** Throws if a component has exited: it will not come back. */
  assertRunning(): void {
    const dead = this.#servers.find((s) => s.hasExited)
    if (dead) throw new Error(`${dead.name} exited:\n${dead.outputTail()}`)
  }

  /** The last output of every component, for a failed wait. */
  describe(): string {
    return this.#servers.map((s) => `--- ${s.name}${s.hasExited ? ' (exited)' : ''}\n${s.outputTail().slice(-3000)}`).join('\n')
  }
}

/** Settings of the node shared by its components. */
export interface NodeSettings {
  dir: string
  nodeName: string
  nodeIp: string
  podCidr: string
  clusterCidr: string
  serviceCidr: string
  dnsIp: string
  caFile: string
  caKeyFile: string
  saKeyFile: string
  kubeconfigs: Record<'controllerManager' | 'scheduler' | 'kubelet' | 'kubeProxy' | 'kubeRouter', string>
  containerdSocket: string
}

export function startControllerManager(c: Components, s: NodeSettings): ChildServer {
  return c.start('kube-controller-manager', [
    `--kubeconfig=${s.kubeconfigs.controllerManager}`,
    `--authentication-kubeconfig=${s.kubeconfigs.controllerManager}`,
    `--authorization-kubeconfig=${s.kubeconfigs.controllerManager}`,
    '--bind-address=127.0.0.1',
    '--leader-elect=false',
    '--controllers=*',
    '--use-service-account-credentials=true',
    `--service-account-private-key-file=${s.saKeyFile}`,
    `--root-ca-file=${s.caFile}`,
    `--cluster-signing-cert-file=${s.caFile}`,
    `--cluster-signing-key-file=${s.caKeyFile}`,
    '--allocate-node-cidrs=true',
    `--cluster-cidr=${s.clusterCidr}`,
    '--node-cidr-mask-size=24',
    `--service-cluster-ip-range=${s.serviceCidr}`,
  ])
}

export function startScheduler(c: Components, s: NodeSettings): ChildServer {
  return c.start('kube-scheduler', [
    `--kubeconfig=${s.kubeconfigs.scheduler}`,
    `--authentication-kubeconfig=${s.kubeconfigs.scheduler}`,
    `--authorization-kubeconfig=${s.kubeconfigs.scheduler}`,
    '--bind-address=127.0.0.1',
    '--leader-elect=false',
  ])
}

/** The kubelet: cgroupfs on this cgroup-v1 host, webhook authn/authz, images never collected, state under dir. */
export async function startKubelet(c: Components, s: NodeSettings): Promise<ChildServer> {
  const config = {
    apiVersion: 'kubelet.config.k8s.io/v1beta1',
    kind: 'KubeletConfiguration',
    cgroupDriver: 'cgroupfs',
    failCgroupV1: false,
    failSwapOn: false,
    containerRuntimeEndpoint: `unix://${s.containerdSocket}`,
    address: s.nodeIp,
    healthzBindAddress: '127.0.0.1',
    readOnlyPort: 0,
    authentication: { anonymous: { enabled: false }, webhook: { enabled: true }, x509: { clientCAFile: s.caFile } },
    authorization: { mode: 'Webhook' },
    clusterDNS: [s.dnsIp],
    clusterDomain: 'cluster.local',
    resolvConf: '/etc/resolv.conf',
    // A small test disk: evict only when it is really full.
    evictionHard: { 'memory.available': '1Mi', 'nodefs.available': '1%', 'nodefs.inodesFree': '1%', 'imagefs.available': '1%' },
    // Imported images cannot be pulled again: never collect them.
    imageGCHighThresholdPercent: 100,
    imageGCLowThresholdPercent: 99,
    serializeImagePulls: false,
    hairpinMode: 'hairpin-veth',
    podLogsDir: join(s.dir, 'pod-logs'),
    rotateCertificates: false,
    syncFrequency: '10s',
    fileCheckFrequency: '10s',
  }
  const configFile = join(s.dir, 'kubelet.yaml')
  await writeFile(configFile, JSON.stringify(config, null, 2))
  return c.start('kubelet', [
    `--config=${configFile}`,
    `--kubeconfig=${s.kubeconfigs.kubelet}`,
    `--root-dir=${join(s.dir, 'kubelet')}`,
    `--cert-dir=${join(s.dir, 'kubelet-pki')}`,
    `--hostname-override=${s.nodeName}`,
    `--node-ip=${s.nodeIp}`,
  ])
}

/** kube-proxy in iptables mode, told not to touch conntrack sysctls or route_localnet. */
export async function startKubeProxy(c: Components, s: NodeSettings): Promise<ChildServer> {
  const config = {
    apiVersion: 'kubeproxy.config.k8s.io/v1alpha1',
    kind: 'KubeProxyConfiguration',
    mode: 'iptables',
    clientConnection: { kubeconfig: s.kubeconfigs.kubeProxy },
    hostnameOverride: s.nodeName,
    clusterCIDR: s.clusterCidr,
    healthzBindAddress: '127.0.0.1:10256',
    metricsBindAddress: '127.0.0.1:10249',
    conntrack: { maxPerCore: 0, min: 0, tcpEstablishedTimeout: '0s', tcpCloseWaitTimeout: '0s' },
    iptables: { localhostNodePorts: false, syncPeriod: '10s', minSyncPeriod: '0s' },
    // NodePorts on the node IP only: other tests' servers on 127.0.0.1 stay out of its rules.
    nodePortAddresses: [`${s.nodeIp}/32`],
  }
  const configFile = join(s.dir, 'kube-proxy.yaml')
  await writeFile(configFile, JSON.stringify(config, null, 2))
  return c.start('kube-proxy', [`--config=${configFile}`])
}

/** kube-router as the NetworkPolicy enforcer only (no routing, no service proxy, no CNI). */
export function startKubeRouter(c: Components, s: NodeSettings): ChildServer {
  return c.start('kube-router', [
    `--kubeconfig=${s.kubeconfigs.kubeRouter}`,
    `--hostname-override=${s.nodeName}`,
    '--run-firewall=true',
    '--run-router=false',
    '--run-service-proxy=false',
    '--run-loadbalancer=false',
    '--enable-cni=false',
    '--enable-ipv6=false',
    '--health-port=0',
    '--metrics-port=0',
  ])
}
