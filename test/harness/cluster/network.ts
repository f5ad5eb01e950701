import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { Teardown } from '../scratch.js'
import { run } from './run.js'

/** The CNI bridge of the test node; its own name, so teardown removes only it. */
export const BRIDGE = 'ffkube0'

/**
 * Puts each address as a /32 on lo (this host has no dummy links) and removes
 * on teardown the ones that were not there before.
 */
export async function addLoopbackAddresses(t: Teardown, ips: string[]): Promise<void> {
  const present = await run('ip', ['-o', '-4', 'addr', 'show', 'dev', 'lo'])
  for (const ip of ips) {
    if (present.includes(` ${ip}/32 `)) continue
    await run('ip', ['addr', 'add', `${ip}/32`, 'dev', 'lo'])
    t.teardown(() => run('ip', ['addr', 'del', `${ip}/32`, 'dev', 'lo'], { allowFailure: true }))
  }
}

/**
 * Refuses, on this host, any packet still addressed to `serviceCidr` once
 * kube-proxy's NAT has run: one for a ClusterIP that kube-proxy did not
 * translate (no Service, or a moment while the API pod is replaced). Without
 * this it would follow this host's default route, and this sandbox's gateway
 * answers every HTTP request with a bodiless 404 (`server: keryx`): the lane's
 * client kept such connections alive and got 404s from them after the API was
 * back. A node's real gateway drops the range instead; kube-proxy's nftables
 * mode rejects it likewise. filter's OUTPUT and FORWARD see the address after
 * NAT, so a translated connection never matches.
 */
export async function rejectUntranslatedServiceTraffic(t: Teardown, serviceCidr: string): Promise<void> {
  for (const chain of ['OUTPUT', 'FORWARD']) {
    const rule = [chain, '-d', serviceCidr, '-m', 'comment', '--comment', 'ffkube test node: a ClusterIP kube-proxy did not translate', '-j', 'REJECT']
    await run('iptables', ['-w', '-I', ...rule])
    t.teardown(() => run('iptables', ['-w', '-D', ...rule], { allowFailure: true }))
  }
}

/** The first host address of a /24-or-larger IPv4 CIDR: the bridge's gateway. */
function gatewayOf(cidr: string): string {
  const [a, b, c, d] = (cidr.split('/')[0] ?? '').split('.').map(Number)
  return [a, b, c, (d ?? 0) + 1].join('.')
}

/**
 * Writes the pod network: a bridge with host-local IPAM on `podCidr` (state
 * under `dir`, not /var/lib/cni), the pods' gateway and masquerade, and portmap.
 */
export async function writeCniConfig(dir: string, podCidr: string): Promise<string> {
  const confDir = join(dir, 'net.d')
  await mkdir(confDir, { recursive: true })
  const conflist = {
    cniVersion: '1.0.0',
    name: 'ffkube',
    plugins: [
      {
        type: 'bridge',
        bridge: BRIDGE,
        isGateway: true,
        ipMasq: true,
        hairpinMode: true,
        ipam: { type: 'host-local', dataDir: join(dir, 'ipam'), ranges: [[{ subnet: podCidr, gateway: gatewayOf(podCidr) }]], routes: [{ dst: '0.0.0.0/0' }] },
      },
      { type: 'portmap', capabilities: { portMappings: true } },
      // No loopback entry: containerd brings up lo itself (its CNI library adds
      // a loopback network), and a chained loopback would act on eth0.
    ],
  }
  await writeFile(join(confDir, '10-ffkube.conflist'), JSON.stringify(conflist, null, 2))
  return confDir
}

/** Deletes the bridge and any veth still attached to it (normally gone with their network namespaces). */
export async function removeBridge(): Promise<void> {
  const links = await run('ip', ['-o', 'link', 'show', 'master', BRIDGE], { allowFailure: true })
  for (const match of links.matchAll(/^\d+: ([^@:]+)/gm)) await run('ip', ['link', 'del', match[1] ?? ''], { allowFailure: true })
  await run('ip', ['link', 'del', BRIDGE], { allowFailure: true })
}
