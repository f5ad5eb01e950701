/**
 * charts/ffkube against a real kube-apiserver: every rendered object passes the
 * apiserver's own validation (server-side apply, dryRun=All), every pod passes
 * Pod Security `restricted` admission, and the operator, authenticated as the
 * chart's ServiceAccount with nothing but the chart's Role, still turns a
 * MediaCommand into a Job and a status, and can do nothing else.
 */
import t from 'tap'
import {
  ApiextensionsV1Api,
  BatchV1Api,
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  KubernetesObjectApi,
  PatchStrategy,
  type KubernetesObject,
  type V1CustomResourceDefinition,
  type V1Deployment,
  type V1PodSpec,
} from '@kubernetes/client-node'
import { KubernetesExecutor } from '../../api/executors/kubernetes-executor.js'
import type { MediaCommand } from '../../contracts/media-command.js'
import { loadOperatorConfig } from '../../operator/config.js'
import { startHelm } from '../harness/helm.js'
import { startKube, type TestKube } from '../harness/kube.js'
import { commandSpec } from '../operator/fixtures.js'
import { cr, getMediaCommand, startOperator } from '../operator/kube-setup.js'
import { eventually } from '../harness/eventually.js'
import { NodeAgent } from '../operator/node-agent.js'
import { containerEnv, deploymentContainer, ofKind, VALUES_ALL_TOGGLES } from './chart-objects.js'

const RELEASE_NAMESPACE = 'ffkube'
const FIELD_MANAGER = 'ffkube-chart-test'

const kube = await startKube(t)
const kc = kube.kubeConfig()
const objectsApi = KubernetesObjectApi.makeApiClient(kc)
const core = kc.makeApiClient(CoreV1Api)
const helm = await startHelm(t)

/** Server-side apply; with dryRun the apiserver validates and admits the object but stores nothing. */
function apply<T extends KubernetesObject>(object: T, dryRun: boolean, client: KubernetesObjectApi = objectsApi): Promise<T> {
  return client.patch(object, undefined, dryRun ? 'All' : undefined, FIELD_MANAGER, true, PatchStrategy.ServerSideApply)
}

async function established(name: string): Promise<void> {
  const extensions = kc.makeApiClient(ApiextensionsV1Api)
  await eventually(`CRD ${name} to be Established`, async () => {
    const crd = await extensions.readCustomResourceDefinition({ name })
    return crd.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True')
  })
}

/**
 * The Prometheus Operator's CRD is not ours to ship; this stand-in serves the
 * kind with an open schema, enough for the apiserver to accept the chart's
 * ServiceMonitor (its fields are checked by the render test, not here). The
 * field name is client-node's model name, serialised as x-kubernetes-preserve-unknown-fields.
 */
const SERVICE_MONITOR_CRD: V1CustomResourceDefinition = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'servicemonitors.monitoring.coreos.com' },
  spec: {
    group: 'monitoring.coreos.com',
    scope: 'Namespaced',
    names: { kind: 'ServiceMonitor', listKind: 'ServiceMonitorList', plural: 'servicemonitors', singular: 'servicemonitor' },
    versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', x_kubernetes_preserve_unknown_fields: true } } }],
  },
}

/** Likewise for the chart's PodMonitor (the API-side processes' /metrics). */
const POD_MONITOR_CRD: V1CustomResourceDefinition = {
  ...SERVICE_MONITOR_CRD,
  metadata: { name: 'podmonitors.monitoring.coreos.com' },
  spec: { ...SERVICE_MONITOR_CRD.spec, names: { kind: 'PodMonitor', listKind: 'PodMonitorList', plural: 'podmonitors', singular: 'podmonitor' } },
}

/** The release namespace, enforcing Pod Security `restricted` so the Deployments' pods are admitted under it. */
await apply({
  apiVersion: 'v1', kind: 'Namespace',
  metadata: { name: RELEASE_NAMESPACE, labels: { 'pod-security.kubernetes.io/enforce': 'restricted', 'pod-security.kubernetes.io/enforce-version': 'latest' } },
}, false)
await apply(SERVICE_MONITOR_CRD, false)
await apply(POD_MONITOR_CRD, false)
await established(SERVICE_MONITOR_CRD.metadata!.name!)
await established(POD_MONITOR_CRD.metadata!.name!)

// First, before any of the chart's objects exist: helm refuses to install over objects it does not own.
t.test('helm install --dry-run=server against the apiserver renders NOTES that say how to start', async (t) => {
  const out = await helm.run(['install', 'ffkube', 'charts/ffkube', '--namespace', RELEASE_NAMESPACE, '--dry-run=server', '--kubeconfig', kube.kubeconfigPath])
  const notes = out.slice(out.indexOf('NOTES:'))
  t.match(notes, 'kubectl -n ffkube exec deploy/ffkube-api -- node dist/api/admin/cli.js create-account --plan business', 'how to create an account')
  t.match(notes, 'kubectl -n ffkube port-forward svc/ffkube-api 8080:80', 'how to reach the API')
  t.match(notes, '"ffmpeg_command": "ffmpeg -i {{in_video}} -vf scale=640:-2 {{out_small}}"', 'a first command, placeholders intact')
  t.match(notes, 'WARNING: no MongoDB URL is set', 'and what is missing')
})

/** Steps that must be real for the rest to be admitted: the CRD, namespaces, ServiceAccounts (pods name them). */
const REAL_FIRST = ['CustomResourceDefinition', 'Namespace', 'ServiceAccount']

/** The assertion the shared step below uses; a subtest has it too. */
type Asserts = Pick<typeof t, 'resolves'>

async function applyChart(t: Asserts, objects: KubernetesObject[]): Promise<void> {
  for (const kind of REAL_FIRST) {
    for (const object of ofKind(objects, kind)) {
      await apply(object, false)
      if (kind === 'CustomResourceDefinition') await established(object.metadata!.name!)
    }
  }
  for (const object of objects.filter((o) => !REAL_FIRST.includes(o.kind!))) {
    const where = `${object.kind} ${object.metadata!.namespace ?? ''}/${object.metadata!.name}`
    await t.resolves(apply(object, true), `${where} passes the apiserver's validation (dry run)`)
  }
}

/** A bare pod of the given spec, dry-run: what Pod Security admission would say to the ReplicaSet or Job controller. */
function dryRunPod(namespace: string, name: string, spec: V1PodSpec): Promise<unknown> {
  return core.createNamespacedPod({ namespace, body: { metadata: { name }, spec }, dryRun: 'All' })
}

for (const [name, valuesFiles] of [['default values', []], ['every toggle on', [VALUES_ALL_TOGGLES]]] as const) {
  t.test(`every object rendered with ${name} is accepted by the apiserver, every pod by Pod Security restricted`, async (t) => {
    const objects = await helm.template({ namespace: RELEASE_NAMESPACE, valuesFiles: [...valuesFiles] })
    await applyChart(t, objects)
    for (const deployment of ofKind<V1Deployment>(objects, 'Deployment')) {
      await t.resolves(dryRunPod(RELEASE_NAMESPACE, `${deployment.metadata!.name}-pod`, deployment.spec!.template.spec!),
        `${deployment.metadata!.name}'s pod is admitted in a restricted namespace`)
    }
  })
}

/** A KubeConfig holding nothing but a token of this ServiceAccount, minted by the TokenRequest API. */
async function kubeConfigAs(kube: TestKube, namespace: string, account: string): Promise<KubeConfig> {
  const token = await core.createNamespacedServiceAccountToken({ name: account, namespace, body: { spec: { audiences: [], expirationSeconds: 3600 } } })
  const restricted = new KubeConfig()
  restricted.loadFromOptions({
    clusters: [{ name: 'harness', server: kube.server, caFile: kube.caFile }],
    users: [{ name: account, token: token.status!.token }],
    contexts: [{ name: account, cluster: 'harness', user: account, namespace }],
    currentContext: account,
  })
  return restricted
}

t.test("the operator, as the chart's ServiceAccount with the chart's Role only, reconciles a MediaCommand and can do nothing else", async (t) => {
  const objects = await helm.template({ namespace: RELEASE_NAMESPACE, setJson: { 'operator.retentionSeconds': '2' } })
  const runners = 'ffkube-runners'
  // For real this time: the namespaces, accounts, Roles and bindings, the runner's upload Secret.
  for (const object of objects.filter((o) => ['Namespace', 'ServiceAccount', 'Role', 'RoleBinding', 'Secret', 'CustomResourceDefinition'].includes(o.kind!))) {
    await apply(object, false)
  }
  await established('mediacommands.ffkube.io')

  const { container } = deploymentContainer(objects, 'ffkube-operator')
  const config = loadOperatorConfig(containerEnv(objects, RELEASE_NAMESPACE, container, { 'metadata.name': 'ffkube-operator-0', 'metadata.namespace': RELEASE_NAMESPACE }))
  t.equal(config.namespace, runners)
  const asOperator = await kubeConfigAs(kube, RELEASE_NAMESPACE, 'ffkube-operator')

  const agent = new NodeAgent(kc, runners, 'complete')
  await agent.start()
  t.teardown(() => agent.stop())
  const operator = await startOperator(t, asOperator, config)
  await eventually('leadership', () => operator.isLeader)

  const spec = commandSpec()
  await new KubernetesExecutor({ kubeConfig: kc, namespace: runners }).execute(spec)
  const job = await eventually('the Job', () => kc.makeApiClient(BatchV1Api).readNamespacedJob({ name: `ffkube-${spec.commandId}`, namespace: runners }))
  t.equal(job.spec!.template.spec!.serviceAccountName, 'ffkube-runner', "the Job runs as the chart's runner account")
  t.equal(job.spec!.template.spec!.containers[0]!.image, 'ghcr.io/ffkube/runner:0.1.0', "with the chart's runner image")
  // Not the name the node agent gives the Job's real pod: a dry run still refuses a name that exists.
  await t.resolves(dryRunPod(runners, `ffkube-${spec.commandId}-admission-check`, job.spec!.template.spec!),
    "the Job's pod is admitted by the runner namespace's Pod Security restricted")
  // runners.warmPods.count is 1 by default: the operator made a warm Job (this node leaves it waiting).
  const warm = await eventually('the warm Job the chart asks for', async () =>
    (await kc.makeApiClient(BatchV1Api).listNamespacedJob({ namespace: runners, labelSelector: 'ffkube.io/warm-pod=true' })).items[0])
  await t.resolves(dryRunPod(runners, 'ffkube-warm-admission-check', warm.spec!.template.spec!),
    "a warm Job's pod, its claim file included, is admitted by Pod Security restricted")
  const done = await eventually('SUCCESS', async () => {
    const mc: MediaCommand = await getMediaCommand(kc, runners, spec.commandId)
    return mc.status?.phase === 'SUCCESS' ? mc : undefined
  })
  t.has(done.status!.conditions, [{ type: 'JobCreated', status: 'True' }, { type: 'Running' }, { type: 'Complete', status: 'True' }], 'status written through the status subresource')
  await eventually('retention to delete the finished MediaCommand', () =>
    getMediaCommand(kc, runners, spec.commandId).then(() => false, (err: { code?: number }) => err.code === 404), 10_000)
  t.match(operator.metrics.render(), /ffkube_operator_reconcile_errors_total 0/, 'no call was forbidden')

  const asOperatorCore = asOperator.makeApiClient(CoreV1Api)
  await t.rejects(asOperatorCore.listNamespacedSecret({ namespace: runners }), { code: 403 }, 'no Secrets, even in its own namespace')
  await t.rejects(asOperatorCore.listNamespacedPod({ namespace: RELEASE_NAMESPACE }), { code: 403 }, 'nothing in another namespace')
  await t.rejects(asOperator.makeApiClient(BatchV1Api).listNamespacedJob({ namespace: 'default' }), { code: 403 }, 'no Jobs elsewhere')
  await t.rejects(asOperator.makeApiClient(CustomObjectsApi).createNamespacedCustomObject({
    ...cr, namespace: runners, body: { apiVersion: 'ffkube.io/v1alpha1', kind: 'MediaCommand', metadata: { name: commandSpec().commandId }, spec: { accountId: 'acc_1', commandType: 'FFMPEG_COMMAND' } },
  }), { code: 403 }, 'it never creates MediaCommands')
  await t.rejects(asOperatorCore.listNamespace(), { code: 403 }, 'nothing cluster-wide')
})

t.test("the worker's token creates MediaCommands and destination Secrets in the runner namespace, and nothing else", async (t) => {
  const runners = 'ffkube-runners'
  const asWorker = await kubeConfigAs(kube, RELEASE_NAMESPACE, 'ffkube-worker')
  const executor = new KubernetesExecutor({
    kubeConfig: asWorker, namespace: runners,
    destinationCredentials: async () => ({ accessKeyId: 'AKIAEXAMPLE', secretAccessKey: 'example' }),
  })
  await t.resolves(executor.execute(commandSpec()), 'the Kubernetes executor works with it')
  const destinationId = `sd_${'0123456789abcdef'.repeat(2)}`
  const withDestination = commandSpec({
    storageDestinationId: destinationId,
    storageDestination: { id: destinationId, endpointUrl: 'https://s3.example.com', region: 'us-east-1', bucket: 'media', prefix: '', pathStyle: false, publicBaseUrl: null },
  })
  await t.resolves(executor.execute(withDestination), 'a command with a storage destination: its Secret, then its MediaCommand, then the owner reference')
  await t.resolves(executor.execute(withDestination), 'a retried dispatch of it (409s) too')
  const secret = await core.readNamespacedSecret({ name: `ffkube-${withDestination.commandId}-destination`, namespace: runners })
  t.same(secret.metadata!.ownerReferences!.map((r) => [r.kind, r.name]), [['MediaCommand', withDestination.commandId]], 'owned by its MediaCommand')
  const workerCore = asWorker.makeApiClient(CoreV1Api)
  await t.rejects(workerCore.readNamespacedSecret({ name: secret.metadata!.name!, namespace: runners }), { code: 403 }, 'cannot read a Secret, even one it wrote')
  await t.rejects(workerCore.listNamespacedSecret({ namespace: runners }), { code: 403 }, 'cannot list Secrets')
  await t.rejects(workerCore.readNamespacedSecret({ name: 'ffkube-storage', namespace: RELEASE_NAMESPACE }), { code: 403 }, 'nothing in its own namespace')
  await t.rejects(asWorker.makeApiClient(BatchV1Api).listNamespacedJob({ namespace: runners }), { code: 403 }, 'no Jobs')
  await t.rejects(new KubernetesExecutor({ kubeConfig: asWorker, namespace: 'default' }).execute(commandSpec()), { code: 403 }, 'no MediaCommands elsewhere')
})
