import { generateKeyPairSync, randomBytes } from 'node:crypto'
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { request } from 'node:https'
import { join } from 'node:path'
import { KubeConfig } from '@kubernetes/client-node'
import { ChildServer } from '../../api/local/child-server.js'
import { toolPath } from '../../api/local/tools.js'
import { freePort } from '../../api/local/ports.js'
import { backgroundLaneDone } from './background-lanes.js'
import { scratchDir, type Teardown } from './scratch.js'

/** A kube-apiserver backed by its own etcd, and an admin credential for it. */
export interface TestKube {
  server: string
  /** The folder holding the apiserver's state (service-account keys in sa.key / sa.pub). */
  dir: string
  /** system:masters; tests that check RBAC mint narrower tokens themselves. */
  adminToken: string
  caFile: string
  kubeconfigPath: string
  kubeConfig(): KubeConfig
}

/** How startKube differs for a real node (test/harness/cluster.ts); the defaults serve envtest-style tests. */
export interface KubeOptions {
  /** Where the apiserver binds and what it advertises (the kubernetes Service's endpoint); 127.0.0.1 by default. */
  address?: string
  serviceCidr?: string
  /** A serving certificate signed by a CA the cluster trusts; by default the apiserver signs its own. */
  tls?: { certFile: string; keyFile: string; caFile: string }
  /** More static bearer tokens, for the node's components. */
  tokens?: { token: string; user: string; groups: string[] }[]
  authorizationMode?: string
  extraArgs?: string[]
  /** Where etcd and the apiserver keep their state, owned by the caller; a fresh scratch folder by default. */
  dir?: string
}

const BIND_ATTEMPTS = 3

async function startEtcd(dir: string): Promise<{ url: string; server: ChildServer }> {
  let lastError: unknown
  for (let attempt = 0; attempt < BIND_ATTEMPTS; attempt++) {
    const [client, peer] = [await freePort(), await freePort()]
    const url = `http://127.0.0.1:${client}`
    const peerUrl = `http://127.0.0.1:${peer}`
    const server = ChildServer.start({
      name: 'etcd',
      command: toolPath('etcd'),
      args: [
        '--data-dir', join(dir, `etcd-${attempt}`),
        '--listen-client-urls', url, '--advertise-client-urls', url,
        '--listen-peer-urls', peerUrl, '--initial-advertise-peer-urls', peerUrl,
        '--initial-cluster', `default=${peerUrl}`,
        // Test data is thrown away; fsync would only slow every write.
        '--unsafe-no-fsync', '--log-level', 'warn',
      ],
    })
    try {
      await server.waitUntilReady(async () => ((await fetch(`${url}/health`)).ok ? true : undefined))
      return { url, server }
    } catch (err) {
      lastError = err
      await server.stop()
    }
  }
  throw lastError
}

/** GET /readyz with the admin token; true once the apiserver serves requests. */
function apiserverReady(host: string, port: number, token: string, ca: Buffer): Promise<true | undefined> {
  return new Promise((resolve) => {
    const req = request(
      { host, port, path: '/readyz', ca, headers: { authorization: `Bearer ${token}` }, timeout: 2_000 },
      (res) => {
        res.resume()
        resolve(res.statusCode === 200 ? true : undefined)
      },
    )
    req.on('error', () => resolve(undefined))
    req.on('timeout', () => req.destroy())
    req.end()
  })
}

function kubeconfigYaml(server: string, caFile: string, token: string): string {
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'harness', cluster: { server, 'certificate-authority': caFile } }],
    users: [{ name: 'admin', user: { token } }],
    contexts: [{ name: 'harness', context: { cluster: 'harness', user: 'admin', namespace: 'default' } }],
    'current-context': 'harness',
  })
}

/**
 * Starts etcd and kube-apiserver as controller-runtime's envtest does: secure
 * port on 127.0.0.1, self-signed serving certificate, RBAC, service-account
 * signing keys, and a static token file for the admin credential. There is no
 * controller-manager, scheduler or kubelet: Jobs are stored, never run.
 */
export async function startKube(t: Teardown, opts: KubeOptions = {}): Promise<TestKube> {
  await backgroundLaneDone('kube')
  const address = opts.address ?? '127.0.0.1'
  const dir = opts.dir ?? (await scratchDir(t, 'ffkube-kube-'))
  await mkdir(dir, { recursive: true })
  const etcd = await startEtcd(dir)
  t.teardown(() => etcd.server.stop())

  const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 })
  await writeFile(join(dir, 'sa.pub'), publicKey.export({ type: 'spki', format: 'pem' }))
  await writeFile(join(dir, 'sa.key'), privateKey.export({ type: 'pkcs8', format: 'pem' }))
  const adminToken = randomBytes(24).toString('hex')
  const tokens = [{ token: adminToken, user: 'admin', groups: ['system:masters'] }, ...(opts.tokens ?? [])]
  await writeFile(join(dir, 'tokens.csv'), tokens.map((e) => `${e.token},${e.user},${e.user},"${e.groups.join(',')}"\n`).join(''))

  let lastError: unknown
  for (let attempt = 0; attempt < BIND_ATTEMPTS; attempt++) {
    const port = await freePort()
    const certDir = join(dir, `certs-${attempt}`)
    const server = ChildServer.start({
      name: 'kube-apiserver',
      command: toolPath('kube-apiserver'),
      args: [
        `--etcd-servers=${etcd.url}`,
        `--etcd-prefix=/registry-${attempt}`,
        `--cert-dir=${certDir}`,
        `--secure-port=${port}`,
        `--bind-address=${address}`,
        `--advertise-address=${address}`,
        `--service-cluster-ip-range=${opts.serviceCidr ?? '10.0.0.0/24'}`,
        '--allow-privileged=true',
        `--authorization-mode=${opts.authorizationMode ?? 'RBAC'}`,
        `--token-auth-file=${join(dir, 'tokens.csv')}`,
        `--service-account-issuer=https://${address}:${port}`,
        `--service-account-key-file=${join(dir, 'sa.pub')}`,
        `--service-account-signing-key-file=${join(dir, 'sa.key')}`,
        ...(opts.tls ? [`--tls-cert-file=${opts.tls.certFile}`, `--tls-private-key-file=${opts.tls.keyFile}`] : []),
        ...(opts.extraArgs ?? []),
      ],
    })
    const caFile = opts.tls?.caFile ?? join(certDir, 'apiserver.crt')
    try {
      await server.waitUntilReady(async () => {
        const ca = await readFile(caFile)
        return apiserverReady(address, port, adminToken, ca)
      }, 60_000)
    } catch (err) {
      lastError = err
      await server.stop()
      continue
    }
    t.teardown(() => server.stop())
    const url = `https://${address}:${port}`
    const kubeconfigPath = join(dir, 'kubeconfig')
    await writeFile(kubeconfigPath, kubeconfigYaml(url, caFile, adminToken))
    const kubeConfig = () => {
      const kc = new KubeConfig()
      kc.loadFromFile(kubeconfigPath)
      return kc
    }
    return { server: url, dir, adminToken, caFile, kubeconfigPath, kubeConfig }
  }
  throw lastError
}
