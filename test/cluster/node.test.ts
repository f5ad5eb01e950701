import { connect, createServer, type AddressInfo, type Server } from 'node:net'
import t, { type Test } from 'tap'
import { startCluster, type TestCluster } from '../harness/cluster.js'
import { eventually } from '../harness/eventually.js'
import { run } from '../harness/cluster/run.js'
import { podFailurePolicy, RUN_CONTAINER } from '../../operator/run-container-start.js'

// A cold node (image import, CoreDNS) plus three pods: more than tap's 300 s default under load.
t.setTimeout(600_000)

/** The securityContext the `restricted` Pod Security level asks of every container. */
const restrictedPod = {
  securityContext: { runAsNonRoot: true, runAsUser: 65534, runAsGroup: 65534, seccompProfile: { type: 'RuntimeDefault' } },
}
const restrictedContainer = {
  securityContext: { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } },
}

interface Condition {
  type: string
  status: string
}

async function apply(cluster: TestCluster, manifest: object): Promise<void> {
  await cluster.kubectl(['apply', '-f', '-'], { input: JSON.stringify(manifest) })
}

async function createNamespace(cluster: TestCluster, name: string, labels: Record<string, string> = {}): Promise<void> {
  await apply(cluster, { apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels } })
}

/** A restricted busybox pod that only sleeps, labelled app=<name>, for `kubectl exec`. */
function sleeper(cluster: TestCluster, namespace: string, name: string): object {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace, labels: { app: name } },
    spec: {
      ...restrictedPod,
      terminationGracePeriodSeconds: 0,
      containers: [{ ...restrictedContainer, name, image: cluster.busyboxImage, imagePullPolicy: 'IfNotPresent', command: ['sleep', '3600'] }],
    },
  }
}

/** A TCP server on the node IP that records each client's address and hangs up. */
async function hostServer(t: Test, host: string): Promise<{ port: number; clients: string[] }> {
  const clients: string[] = []
  const server: Server = createServer((socket) => {
    clients.push(socket.remoteAddress ?? '')
    socket.end('hello\n')
  })
  await new Promise<void>((resolve) => server.listen(0, host, resolve))
  t.teardown(() => new Promise((resolve) => server.close(resolve)))
  return { port: (server.address() as AddressInfo).port, clients }
}

t.test('a single-node cluster', async (t) => {
  let leftovers: string[] | undefined
  await t.test('on a real node', async (t) => {
    const cluster = await startCluster(t, { onTornDown: (changes) => (leftovers = changes) })
    t.comment(`startup timings (ms since start): ${JSON.stringify(cluster.timings)}`)

    await t.test('runs a Job under the restricted Pod Security level to completion, and serves its logs', async (t) => {
      const ns = 'restricted-job'
      await createNamespace(cluster, ns, { 'pod-security.kubernetes.io/enforce': 'restricted' })
      const applied = Date.now()
      await apply(cluster, {
        apiVersion: 'batch/v1',
        kind: 'Job',
        metadata: { name: 'hello', namespace: ns },
        spec: {
          backoffLimit: 0,
          template: {
            spec: {
              ...restrictedPod,
              restartPolicy: 'Never',
              containers: [
                {
                  ...restrictedContainer,
                  name: 'hello',
                  image: cluster.busyboxImage,
                  imagePullPolicy: 'IfNotPresent',
                  command: ['sh', '-c', 'echo "hello from uid $(id -u)"'],
                },
              ],
            },
          },
        },
      })
      await eventually('the Job to complete', async () => {
        const job = JSON.parse(await cluster.kubectl(['get', 'job', 'hello', '-n', ns, '-o', 'json'])) as { status: { conditions?: Condition[] } }
        const failed = job.status.conditions?.find((c) => c.type === 'Failed' && c.status === 'True')
        if (failed) throw new Error('the Job failed')
        return job.status.conditions?.some((c) => c.type === 'Complete' && c.status === 'True')
      }, 120_000)
      t.comment(`Job applied to Complete: ${Date.now() - applied} ms`)
      t.equal((await cluster.kubectl(['logs', '-n', ns, 'job/hello'])).trim(), 'hello from uid 65534')
    })

    await t.test("with the runner Job's podFailurePolicy, a pod whose run container cannot start is replaced, not counted as the Job's failure", async (t) => {
      const ns = 'never-started'
      await createNamespace(cluster, ns, { 'pod-security.kubernetes.io/enforce': 'restricted' })
      // A command that is not in the image: the runtime creates the container and fails to start
      // it, the same StartError a containerd restart gives a container it was creating.
      const container = (name: string, command: string[]) => ({ ...restrictedContainer, name, image: cluster.busyboxImage, imagePullPolicy: 'IfNotPresent', command })
      await apply(cluster, {
        apiVersion: 'batch/v1',
        kind: 'Job',
        metadata: { name: 'never-started', namespace: ns },
        spec: {
          backoffLimit: 0,
          podFailurePolicy: podFailurePolicy(),
          template: {
            spec: {
              ...restrictedPod,
              restartPolicy: 'Never',
              terminationGracePeriodSeconds: 0,
              containers: [container(RUN_CONTAINER, ['/no-such-program']), container('upload', ['true'])],
            },
          },
        },
      })
      interface PodList { items: { metadata: { name: string; creationTimestamp: string }; status: { phase?: string; containerStatuses?: { name: string; state?: { terminated?: { exitCode: number; reason?: string } } }[] } }[] }
      // With backoffLimit 0, a second pod exists only if the Job ignored the first one's failure.
      const pods = await eventually('the Job to make a second pod', async () => {
        const list = JSON.parse(await cluster.kubectl(['get', 'pods', '-n', ns, '-l', 'job-name=never-started', '-o', 'json'])) as PodList
        return list.items.length >= 2 ? list.items : undefined
      }, 180_000)
      const first = [...pods].sort((a, b) => a.metadata.creationTimestamp.localeCompare(b.metadata.creationTimestamp))[0]!
      t.equal(first.status.phase, 'Failed')
      t.match(first.status.containerStatuses?.find((c) => c.name === RUN_CONTAINER)?.state?.terminated, { exitCode: 128, reason: 'StartError' },
        'the run container never started: exit code 128, reason StartError (what the policy and the operator match)')
      const job = JSON.parse(await cluster.kubectl(['get', 'job', 'never-started', '-n', ns, '-o', 'json'])) as { status: { failed?: number; conditions?: Condition[] } }
      t.notOk(job.status.conditions?.some((c) => (c.type === 'Failed' || c.type === 'FailureTarget') && c.status === 'True'), 'the Job has not failed')
      t.equal(job.status.failed ?? 0, 0, 'and counted no failed pod')
      await cluster.kubectl(['delete', 'job', 'never-started', '-n', ns, '--wait=false'])
    })

    await t.test('refuses a pod that breaks the restricted level in a namespace that enforces it', async (t) => {
      const ns = 'restricted-refusal'
      await createNamespace(cluster, ns, { 'pod-security.kubernetes.io/enforce': 'restricted' })
      const pod = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'root', namespace: ns }, spec: { containers: [{ name: 'c', image: cluster.busyboxImage }] } }
      await t.rejects(apply(cluster, pod), /violates PodSecurity "restricted/)
    })

    await t.test('resolves a Service name through CoreDNS from a pod', async (t) => {
      const ns = 'dns'
      await createNamespace(cluster, ns)
      await apply(cluster, sleeper(cluster, ns, 'resolver'))
      await cluster.kubectl(['wait', '-n', ns, '--for=condition=Ready', 'pod/resolver', '--timeout=120s'])
      const answer = await cluster.kubectl(['exec', '-n', ns, 'resolver', '--', 'nslookup', 'kubernetes.default.svc.cluster.local'])
      t.match(answer, /Address:\s+10\.96\.0\.1\b/)
    })

    await t.test('a connection to a ClusterIP that no Service holds is refused on the node, not answered from beyond it', async (t) => {
      // The last address of the range: the apiserver allocates ClusterIPs from the low end.
      const [a, b] = cluster.serviceCidr.split('.')
      const unheld = `${a}.${b}.255.254`
      const outcome = await new Promise<string>((resolve) => {
        const socket = connect({ host: unheld, port: 80, timeout: 20_000 })
        socket.once('connect', () => { socket.destroy(); resolve(`connected to ${socket.remoteAddress}`) })
        socket.once('timeout', () => { socket.destroy(); resolve('timed out') })
        socket.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message))
      })
      t.equal(outcome, 'ECONNREFUSED', `a connection to ${unheld}:80 is refused`)
    })

    await t.test('a NetworkPolicy denying egress to a host address blocks a connection the pod makes without it', async (t) => {
      const ns = 'netpol'
      await createNamespace(cluster, ns)
      const server = await hostServer(t, cluster.nodeIp)
      await apply(cluster, sleeper(cluster, ns, 'client'))
      await cluster.kubectl(['wait', '-n', ns, '--for=condition=Ready', 'pod/client', '--timeout=120s'])
      const podIp = (await cluster.kubectl(['get', 'pod', 'client', '-n', ns, '-o', 'jsonpath={.status.podIP}'])).trim()
      const connect = () => cluster.kubectl(['exec', '-n', ns, 'client', '--', 'nc', '-w', '5', cluster.nodeIp, String(server.port)], { input: '' })

      // Positive control: without a policy the pod reaches the host server.
      t.match(await connect(), /hello/)
      t.same(server.clients, [podIp], 'the host server saw the pod connect')

      await apply(cluster, {
        apiVersion: 'networking.k8s.io/v1',
        kind: 'NetworkPolicy',
        metadata: { name: 'deny-host', namespace: ns },
        spec: {
          podSelector: { matchLabels: { app: 'client' } },
          policyTypes: ['Egress'],
          egress: [{ to: [{ ipBlock: { cidr: '0.0.0.0/0', except: [`${cluster.nodeIp}/32`] } }] }],
        },
      })
      // kube-router has applied the policy to the pod once the pod's chain runs through it.
      await eventually('kube-router to apply the policy to the pod', async () => (await run('iptables-save', [])).includes('run through nw policy deny-host'), 60_000)
      const denied = await connect().then(
        () => 'connected',
        (err: Error) => err.message,
      )
      t.match(denied, /can't connect to remote host/, 'nc in the pod reports it could not connect')
      // Asked only now that the pod has given up: a connection that got through would be recorded.
      t.same(server.clients, [podIp], 'the host server saw no connection after the policy')
    })
  })
  t.same(leftovers, [], 'teardown put back sysctls, iptables, ipsets, nftables tables, lo and host folders')
})
