/**
 * charts/ffkube rendered by helm, checked as objects: lint, the restricted pod
 * security of every pod it makes (and of the Jobs its operator settings make),
 * least-privilege RBAC, the runner NetworkPolicy, the CRD copy, and that every
 * process's environment is one its config module accepts.
 */
import t from 'tap'
import { readFile } from 'node:fs/promises'
import {
  loadAllYaml,
  loadYaml,
  type KubernetesObject,
  type V1Container,
  type V1CustomResourceDefinition,
  type V1Deployment,
  type V1NetworkPolicy,
  type V1PodSpec,
  type V1Role,
  type V1SecurityContext,
} from '@kubernetes/client-node'
import { PLANS } from '../../api/accounts/plans.js'
import { DEFAULT_STORAGE_QUOTAS } from '../../api/files/storage-quota.js'
import { loadConfig, requireExternalServices } from '../../api/config.js'
import { loadOperatorConfig } from '../../operator/config.js'
import { buildJob } from '../../operator/job-builder.js'
import { RESERVED_RUNNER_ENV } from '../../operator/reserved-runner-env.js'
import { CHART_DIR, findObject, startHelm } from '../harness/helm.js'
import { storedMediaCommand } from '../operator/fixtures.js'
import { containerEnv, deploymentContainer, ofKind, VALUES_ALL_TOGGLES } from './chart-objects.js'

const helm = await startHelm(t)
const renders: Array<{ name: string; objects: KubernetesObject[]; runnerNamespace: string }> = [
  { name: 'default values', objects: await helm.template(), runnerNamespace: 'ffkube-runners' },
  { name: 'every toggle on', objects: await helm.template({ valuesFiles: [VALUES_ALL_TOGGLES] }), runnerNamespace: 'media-jobs' },
]
/** The pattern values.schema.json refuses in runners.env names. */
const SECRET_LOOKING_NAME = /SECRET|PASSWORD|TOKEN|CREDENTIAL|ACCESS_KEY|PRIVATE/i
const COMPONENTS = ['api', 'worker', 'webhook-deliverer', 'operator']
/** The assertions the shared checks below use; a subtest has them too. */
type Asserts = Pick<typeof t, 'equal' | 'not' | 'ok' | 'notOk'>

t.test('helm lint passes with default values and with every toggle on', async (t) => {
  t.match(await helm.run(['lint', '--strict', 'charts/ffkube']), /1 chart\(s\) linted, 0 chart\(s\) failed/)
  t.match(await helm.run(['lint', '--strict', 'charts/ffkube', '--values', VALUES_ALL_TOGGLES]), /0 chart\(s\) failed/)
})

t.test('the PodMonitor scrapes /metrics of the api, worker and webhook-deliverer pods on the port each names', async (t) => {
  const [, all] = renders
  type PodMonitor = KubernetesObject & {
    spec: {
      selector: { matchLabels: Record<string, string>; matchExpressions: Array<{ key: string; operator: string; values: string[] }> }
      podMetricsEndpoints: Array<{ port: string; path: string; interval: string }>
    }
  }
  const [monitor] = ofKind<PodMonitor>(all!.objects, 'PodMonitor')
  t.ok(monitor)
  if (!monitor) return
  t.equal(monitor.metadata?.labels?.release, 'kube-prometheus-stack', 'the labels Prometheus selects by')
  const scraped = ['api', 'worker', 'webhook-deliverer']
  t.same(monitor.spec.selector.matchExpressions, [{ key: 'app.kubernetes.io/component', operator: 'In', values: scraped }], 'the three API-side components, not the operator (its ServiceMonitor) nor runners')
  for (const component of scraped) {
    const { deployment, container } = deploymentContainer(all!.objects, `ffkube-${component}`)
    const labels = deployment.spec!.template.metadata!.labels!
    t.ok(Object.entries(monitor.spec.selector.matchLabels).every(([k, v]) => labels[k] === v), `${component}'s pods match the selector`)
    const ports = (container.ports ?? []).map((p) => p.name)
    const endpoints = monitor.spec.podMetricsEndpoints.filter((e) => ports.includes(e.port))
    t.equal(endpoints.length, 1, `one endpoint for ${component}'s port (${ports.join(', ')})`)
    t.match(endpoints[0], { path: '/metrics', interval: '20s' })
  }
})

t.test('every toggle renders its object', async (t) => {
  const [defaults, all] = renders
  const kinds = (objects: KubernetesObject[]) => new Set(objects.map((o) => o.kind))
  t.notOk(kinds(defaults!.objects).has('Ingress'), 'no Ingress by default')
  t.notOk(kinds(defaults!.objects).has('ServiceMonitor'), 'no ServiceMonitor by default')
  t.notOk(kinds(defaults!.objects).has('PodMonitor'), 'no PodMonitor by default')
  for (const kind of ['Ingress', 'ServiceMonitor', 'PodMonitor', 'CustomResourceDefinition', 'Namespace', 'NetworkPolicy', 'PodDisruptionBudget']) {
    t.ok(kinds(all!.objects).has(kind), `${kind} with every toggle on`)
  }
  t.equal(ofKind(all!.objects, 'PodDisruptionBudget').length, 4, 'one PodDisruptionBudget per component')
  const [ingress] = ofKind(all!.objects, 'Ingress') as Array<KubernetesObject & { spec: { rules: Array<{ http: { paths: Array<{ path: string; pathType: string }> } }> } }>
  for (const rule of ingress!.spec.rules) {
    t.same(rule.http.paths.map((p) => [p.path, p.pathType]), [['/api/', 'Prefix'], ['/docs', 'Prefix'], ['/openapi.json', 'Exact'], ['/console', 'Prefix']], 'the Ingress exposes the API, its docs and the console, never /metrics or the health endpoints')
  }
  for (const c of COMPONENTS) {
    const { deployment } = deploymentContainer(all!.objects, `ffkube-${c}`)
    t.ok(deployment.spec!.replicas! >= 1, `${c} has its own replica count`)
  }
  const crdOff = await helm.template({ setJson: { 'crds.enabled': 'false' } })
  t.notOk(crdOff.some((o) => o.kind === 'CustomResourceDefinition'), 'crds.enabled=false leaves the CRD out')
})

function restrictedContainer(t: Asserts, where: string, c: V1Container, pod: V1PodSpec): void {
  const sc: V1SecurityContext = c.securityContext ?? {}
  t.equal(sc.allowPrivilegeEscalation, false, `${where}: no privilege escalation`)
  t.equal(sc.readOnlyRootFilesystem, true, `${where}: read-only root filesystem`)
  t.not(sc.privileged, true, `${where}: not privileged`)
  t.ok(sc.capabilities?.drop?.includes('ALL'), `${where}: drops ALL capabilities`)
  t.notOk(sc.capabilities?.add?.length, `${where}: adds no capability`)
  t.ok(sc.runAsNonRoot ?? pod.securityContext?.runAsNonRoot, `${where}: runAsNonRoot`)
  t.not(sc.runAsUser ?? pod.securityContext?.runAsUser, 0, `${where}: not uid 0`)
  t.equal((sc.seccompProfile ?? pod.securityContext?.seccompProfile)?.type, 'RuntimeDefault', `${where}: seccomp RuntimeDefault`)
  t.ok(c.resources?.requests && c.resources?.limits?.memory, `${where}: requests and a memory limit`)
}

function restrictedPod(t: Asserts, where: string, pod: V1PodSpec): void {
  t.equal(pod.securityContext?.runAsNonRoot, true, `${where}: pod runAsNonRoot`)
  t.equal(pod.securityContext?.seccompProfile?.type, 'RuntimeDefault', `${where}: pod seccomp RuntimeDefault`)
  t.notOk(pod.hostNetwork || pod.hostPID || pod.hostIPC, `${where}: no host namespaces`)
  t.notOk(pod.volumes?.some((v) => v.hostPath), `${where}: no hostPath volume`)
  for (const c of [...(pod.initContainers ?? []), ...pod.containers]) restrictedContainer(t, `${where}/${c.name}`, c, pod)
}

t.test('every pod the chart makes is restricted, probed on /healthz and /readyz, and spread', async (t) => {
  for (const { name, objects } of renders) {
    const deployments = ofKind<V1Deployment>(objects, 'Deployment')
    t.same(deployments.map((d) => d.metadata!.name).sort(), COMPONENTS.map((c) => `ffkube-${c}`).sort(), `${name}: one Deployment per component`)
    for (const d of deployments) {
      const pod = d.spec!.template.spec!
      const where = `${name}: ${d.metadata!.name}`
      restrictedPod(t, where, pod)
      const c = pod.containers[0]!
      t.equal(c.livenessProbe?.httpGet?.path, '/healthz', `${where}: liveness on /healthz`)
      t.equal(c.readinessProbe?.httpGet?.path, d.metadata!.name === 'ffkube-operator' ? '/healthz' : '/readyz', `${where}: readiness probe`)
      t.ok(pod.topologySpreadConstraints?.every((s) => s.labelSelector?.matchLabels?.['app.kubernetes.io/component']), `${where}: spread by its own pods`)
      const token = ['ffkube-worker', 'ffkube-operator'].includes(d.metadata!.name!)
      t.equal(pod.automountServiceAccountToken, token, `${where}: ${token ? 'a token' : 'no token'}`)
    }
  }
})

t.test("the operator's settings make restricted Jobs that run as the runner account, with no token", async (t) => {
  for (const { name, objects, runnerNamespace } of renders) {
    const { container } = deploymentContainer(objects, 'ffkube-operator')
    const config = loadOperatorConfig(containerEnv(objects, 'ffkube', container, { 'metadata.name': 'ffkube-operator-0' }))
    t.equal(config.namespace, runnerNamespace, `${name}: watches the runner namespace`)
    const job = buildJob(storedMediaCommand(undefined, runnerNamespace), config.job)
    const pod = job.spec!.template.spec!
    restrictedPod(t, `${name}: runner Job`, pod)
    t.equal(pod.automountServiceAccountToken, false, `${name}: runner pods mount no token`)
    const account = findObject<KubernetesObject & { automountServiceAccountToken?: boolean }>(objects, 'ServiceAccount', pod.serviceAccountName!)
    t.equal(account.metadata!.namespace, runnerNamespace)
    t.equal(account.automountServiceAccountToken, false, `${name}: the runner account mounts no token either`)
    const bound = ofKind<KubernetesObject & { subjects?: Array<{ name: string }> }>(objects, 'RoleBinding')
      .some((b) => b.subjects?.some((s) => s.name === pod.serviceAccountName))
    t.notOk(bound, `${name}: the runner account is bound to no Role`)
    const upload = findObject<KubernetesObject & { data?: Record<string, string> }>(objects, 'Secret', config.job.uploadSecretName)
    t.equal(upload.metadata!.namespace, runnerNamespace, `${name}: the upload Secret sits beside the Jobs`)
    t.ok(upload.data?.[config.job.uploadSecretKey], `${name}: with the key the Job mounts`)
  }
})

/** The names operator/config.ts reads: every str/int/optional/json(env, 'NAME') call. */
async function operatorVariables(): Promise<string[]> {
  const source = await readFile('operator/config.ts', 'utf8')
  return [...new Set([...source.matchAll(/\b(?:str|int|optional|json(?:<[^>]*>)?)\(\s*env,\s*'([A-Z0-9_]+)'/g)].map((m) => m[1]!))].sort()
}

t.test('the operator Deployment sets every variable of operator/config.ts, and the operator accepts them', async (t) => {
  const names = await operatorVariables()
  t.ok(names.length >= 30, `found the operator's variables (${names.length})`)
  for (const { name, objects } of renders) {
    const { container } = deploymentContainer(objects, 'ffkube-operator')
    const set = new Set(container.env!.map((e) => e.name))
    t.same(names.filter((n) => !set.has(n)), [], `${name}: no operator variable left unset`)
    t.doesNotThrow(() => loadOperatorConfig(containerEnv(objects, 'ffkube', container)), `${name}: loadOperatorConfig accepts them`)
  }
  const [, all] = renders
  const config = loadOperatorConfig(containerEnv(all!.objects, 'ffkube', deploymentContainer(all!.objects, 'ffkube-operator').container))
  t.equal(config.job.runnerImage, 'registry.example.com/ffkube/runner@sha256:fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210')
  t.equal(config.job.runtimeClassName, 'gvisor')
  t.same(config.job.nodeSelector, { 'ffkube.io/runners': 'true' })
  t.same(config.job.tolerations, [{ key: 'ffkube.io/runners', operator: 'Exists', effect: 'NoSchedule' }])
  t.equal(config.job.runnerEnv.S3_ENDPOINT, 'https://minio.storage:9000')
  t.equal(config.job.runnerEnv.FFKUBE_INPUT_TIMEOUT_SECONDS, '300')
  t.equal(config.job.runnerEnv.ALLOW_PRIVATE_NETWORKS, 'false', 'runners guard user URLs as the API does')
  t.equal(config.natsUrl, 'nats://nats.messaging:4222')
})

t.test('the API-side Deployments configure kubernetes mode from the chart Secret', async (t) => {
  const [, all] = renders
  for (const [c, role] of [['api', 'api'], ['worker', 'worker'], ['webhook-deliverer', 'webhooks']] as const) {
    const { container } = deploymentContainer(all!.objects, `ffkube-${c}`)
    const config = loadConfig(containerEnv(all!.objects, 'ffkube', container))
    t.same(config.roles, [role], `${c}: runs the ${role} role only`)
    t.doesNotThrow(() => requireExternalServices(config), `${c}: every external service configured`)
    t.equal(config.executor, 'kubernetes', `${c}: EXECUTOR=kubernetes`)
    t.equal(config.host, '0.0.0.0', `${c}: listens on the pod address`)
    t.equal(config.port, 8080)
    t.equal(config.kubeNamespace, 'media-jobs', `${c}: MediaCommands go to the runner namespace`)
    t.equal(config.mongodbUrl, 'mongodb://ffkube:secret@mongo.db:27017/?authSource=admin')
    t.equal(config.natsUrl, 'nats://nats.messaging:4222')
    t.same(config.s3, { endpoint: 'https://minio.storage:9000', bucket: 'media', region: 'eu-west-1', accessKeyId: 'AKIAEXAMPLE', secretAccessKey: 'example-secret-key', forcePathStyle: true })
    t.equal(config.encryptionKeys, 'k1:MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=')
    t.same(config.rateLimits, { free: 10, trial: 20, growth: 30, business: 0 })
    t.same(config.retentionDays, { free: 2, trial: 14, growth: 60, business: 0 }, `${c}: the plans' retention`)
    t.same(config.storageQuotas, { free: 1048576, trial: 0, growth: 3 * 1024 ** 3, business: 2 * 1024 ** 4 }, `${c}: the plans' storage quotas, 2 TiB written out whole`)
    t.equal(config.consoleSignInFailuresPerMinute, 5)
    t.same(config.trustProxy, c === 'api' ? ['10.244.0.0/16', 'fd00::/8'] : false, `${c}: TRUST_PROXY set on the API alone`)
    t.equal(config.allowPrivateNetworks, false)
    t.equal(container.command![1]!.startsWith('dist/'), true, `${c}: an entrypoint of the image`)
  }
  t.equal(PLANS.length, 4, 'a rate limit per plan')
  const [defaults] = renders
  const defaultApi = loadConfig(containerEnv(defaults!.objects, 'ffkube', deploymentContainer(defaults!.objects, 'ffkube-api').container))
  t.equal(defaultApi.trustProxy, false, 'by default the API trusts no proxy\'s X-Forwarded-For')
  t.equal(defaultApi.consoleSignInFailuresPerMinute, 10)
  t.same(defaultApi.retentionDays, { free: 1, trial: 7, growth: 30, business: 90 }, 'the chart keeps files as long as the service does by default')
  t.same(defaultApi.storageQuotas, DEFAULT_STORAGE_QUOTAS, 'the chart gives each plan the storage quota the service does by default')
  const keys = containerEnv(defaults!.objects, 'ffkube', deploymentContainer(defaults!.objects, 'ffkube-api').container).ENCRYPTION_KEYS
  t.match(keys, /^k1:[A-Za-z0-9+/]{43}=$/, 'a generated 32-byte encryption key when none is given')
})

t.test('RBAC: namespaced Roles only, the operator exactly operator/rbac.yaml, the worker only MediaCommands and Secrets', async (t) => {
  const [wanted] = loadAllYaml(await readFile('operator/rbac.yaml', 'utf8')) as V1Role[]
  for (const { name, objects, runnerNamespace } of renders) {
    t.same(objects.filter((o) => o.kind === 'ClusterRole' || o.kind === 'ClusterRoleBinding'), [], `${name}: nothing cluster-wide`)
    const roles = ofKind<V1Role>(objects, 'Role')
    t.same(roles.map((r) => [r.metadata!.name, r.metadata!.namespace]).sort(), [['ffkube-operator', runnerNamespace], ['ffkube-worker', runnerNamespace]])
    t.same(findObject<V1Role>(objects, 'Role', 'ffkube-operator').rules, wanted!.rules, `${name}: operator rules are operator/rbac.yaml's`)
    t.same(findObject<V1Role>(objects, 'Role', 'ffkube-worker').rules, [
      { apiGroups: ['ffkube.io'], resources: ['mediacommands'], verbs: ['create', 'get', 'patch'] },
      { apiGroups: [''], resources: ['secrets'], verbs: ['create', 'patch'] },
    ], `${name}: the worker creates (and cancels) MediaCommands and destination Secrets, and reads no Secret`)
    for (const role of roles) {
      for (const rule of role.rules ?? []) {
        t.notOk(rule.verbs.includes('*') || rule.resources?.includes('*') || rule.apiGroups?.includes('*'), `${name}: ${role.metadata!.name} uses no wildcard`)
      }
    }
  }
  const noSecrets = await helm.template({ setJson: { 'worker.rbac.destinationSecrets': 'false' } })
  t.same(findObject<V1Role>(noSecrets, 'Role', 'ffkube-worker').rules!.map((r) => r.resources), [['mediacommands']], 'the Secret rule can be turned off')
})

t.test('runner pods get no ingress and egress only to DNS and public addresses', async (t) => {
  for (const { name, objects, runnerNamespace } of renders) {
    const policy = ofKind<V1NetworkPolicy>(objects, 'NetworkPolicy').find((p) => p.metadata!.namespace === runnerNamespace)
    if (!policy) {
      t.fail(`${name}: no NetworkPolicy in the runner namespace`)
      continue
    }
    const spec = policy.spec!
    t.same(spec.podSelector?.matchLabels, { 'app.kubernetes.io/managed-by': 'ffkube-operator' }, `${name}: selects the operator's Job pods`)
    t.same(spec.policyTypes, ['Ingress', 'Egress'])
    t.same(spec.ingress ?? [], [], `${name}: nothing may connect to a runner`)
    const [dns, internet] = spec.egress!
    t.same(dns!.ports!.map((p) => `${p.protocol}/${p.port}`), ['UDP/53', 'TCP/53'], `${name}: DNS on port 53 only`)
    t.ok(dns!.to!.every((peer) => peer.namespaceSelector && peer.podSelector), `${name}: DNS only to the cluster DNS pods`)
    const v4 = internet!.to!.find((p) => p.ipBlock?.cidr === '0.0.0.0/0')!.ipBlock!
    for (const cidr of ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '169.254.0.0/16', '100.64.0.0/10', '127.0.0.0/8']) {
      t.ok(v4.except!.includes(cidr), `${name}: ${cidr} is not "the internet"`)
    }
    const v6 = internet!.to!.find((p) => p.ipBlock?.cidr === '::/0')!.ipBlock!
    t.same(v6.except, ['::1/128', 'fc00::/7', 'fe80::/10'])
    const namespace = objects.find((o) => o.kind === 'Namespace' && o.metadata!.name === runnerNamespace)
    t.equal(namespace?.metadata?.labels?.['pod-security.kubernetes.io/enforce'], 'restricted', `${name}: Pod Security restricted is enforced`)
  }
  const [, all] = renders
  t.equal(ofKind<V1NetworkPolicy>(all!.objects, 'NetworkPolicy').find((p) => p.metadata!.name === 'ffkube-runner')!.spec!.egress!.length, 3, 'extraEgress appended (NATS)')
})

t.test('service NetworkPolicies admit ingress on the component port only', async (t) => {
  const [, all] = renders
  for (const [c, port] of [['api', 8080], ['worker', 8080], ['webhook-deliverer', 8080], ['operator', 9090]] as const) {
    const policy = findObject<V1NetworkPolicy>(all!.objects, 'NetworkPolicy', `ffkube-${c}`)
    t.same(policy.spec!.policyTypes, ['Ingress'])
    t.same(policy.spec!.ingress!.flatMap((r) => r.ports!.map((p) => p.port)), [port], `${c}: port ${port} only`)
  }
})

t.test('the CRD is crds/ byte for byte in files/, and rendered unchanged', async (t) => {
  const source = await readFile('crds/mediacommands.ffkube.io.yaml', 'utf8')
  t.equal(await readFile('charts/ffkube/files/mediacommands.ffkube.io.yaml', 'utf8'), source,
    'charts/ffkube/files/ is a copy of crds/: cp crds/mediacommands.ffkube.io.yaml charts/ffkube/files/')
  const wanted = loadYaml<V1CustomResourceDefinition>(source)
  for (const { name, objects } of renders) {
    const crd = findObject<V1CustomResourceDefinition>(objects, 'CustomResourceDefinition', 'mediacommands.ffkube.io')
    t.same(crd.spec, wanted.spec, `${name}: same spec`)
    t.equal(crd.metadata!.annotations?.['helm.sh/resource-policy'], 'keep', `${name}: kept on uninstall (crds.keep)`)
  }
  const notKept = await helm.template({ setJson: { 'crds.keep': 'false' } })
  t.notOk(findObject(notKept, 'CustomResourceDefinition', 'mediacommands.ffkube.io').metadata!.annotations, 'crds.keep=false drops the annotation')
})

/**
 * Keys of values.yaml without a comment line above them. A key documented with
 * `# --` holds a default value: the keys inside it are data, not settings.
 */
function undocumentedKeys(text: string): string[] {
  const missing: string[] = []
  let previous = ''
  let dataIndent = Infinity
  for (const line of text.split('\n')) {
    if (!line.trim()) continue
    const indent = line.length - line.trimStart().length
    if (indent <= dataIndent) dataIndent = Infinity
    const key = /^\s*([\w.\-/]+):/.exec(line)
    if (key && indent < dataIndent) {
      if (!previous.trim().startsWith('#')) missing.push(line.trim())
      if (previous.trim().startsWith('# --')) dataIndent = indent
    }
    previous = line
  }
  return missing
}

t.test('every key of values.yaml has a comment, and values.schema.json knows it', async (t) => {
  const text = await readFile('charts/ffkube/values.yaml', 'utf8')
  t.same(undocumentedKeys(text), [], 'no key without a comment')
  t.same(undocumentedKeys('a: 1\n# b\nb: 2\n'), ['a: 1'], 'the check itself finds a bare key')
  // The schema forbids unknown keys, so every key of values.yaml must be declared in it (helm lint validated the defaults).
  const schema = JSON.parse(await readFile('charts/ffkube/values.schema.json', 'utf8')) as { additionalProperties: boolean }
  t.equal(schema.additionalProperties, false)
})

t.test("the chart's list of names runners.env may not set is the operator's, name for name", async (t) => {
  const template = await readFile(`${CHART_DIR}/templates/operator.yaml`, 'utf8')
  const dict = /\$reserved := dict\n([\s\S]*?)\n\}\}/.exec(template)?.[1]
  t.ok(dict, 'templates/operator.yaml holds the $reserved dict')
  const chartNames = [...(dict ?? '').matchAll(/^\s*"([A-Z0-9_]+)"/gm)].map((m) => m[1]).sort()
  t.same(chartNames, Object.keys(RESERVED_RUNNER_ENV).sort(), 'the same names in templates/operator.yaml and operator/reserved-runner-env.ts')
})

t.test('values the programs would refuse are refused at install', async (t) => {
  await t.rejects(helm.template({ setJson: { 'runners.env': '{"S3_SECRET_ACCESS_KEY":"x"}' } }), /runners\.env|S3_SECRET_ACCESS_KEY|propertyNames|does not match|not/i,
    'a credential in RUNNER_ENV')
  await t.rejects(helm.template({ setJson: { 'operator.workers': '0' } }), /workers/, 'OPERATOR_WORKERS out of range')
  for (const [name, reason] of Object.entries(RESERVED_RUNNER_ENV)) {
    // Names that also look like credentials meet the schema first; the rest the template's own list.
    const refusal = SECRET_LOOKING_NAME.test(name) ? /runners\.env/ : new RegExp(`runners\\.env\\.${name}: ${reason.replace(/[()'.]/g, '\\$&')}`)
    await t.rejects(helm.template({ setJson: { 'runners.env': JSON.stringify({ [name]: 'elsewhere' }) } }), refusal, `runners.env.${name}, which the operator sets`)
  }
  await t.rejects(helm.template({ setJson: { 'config.s3.endpoint': '"minio:9000"' } }), /endpoint/, 'an S3 endpoint without a scheme')
  await t.rejects(helm.template({ setJson: { 'api.replica': '2' } }), /replica/, 'a misspelt key')
  await t.rejects(helm.template({ setJson: { 'api.trustProxy': '"1"' } }), /trustProxy/, 'a TRUST_PROXY hop count')
  await t.rejects(helm.template({ setJson: { 'api.trustProxy': '"ingress-nginx"' } }), /trustProxy/, 'a TRUST_PROXY entry that is no address')
  await t.rejects(helm.template({ setJson: { 'secrets.existingSecret': '"mine"' } }), /runners\.uploadSecret\.existingSecret/,
    'an existing Secret without the runner namespace copy')
  const existing = await helm.template({ setJson: { 'secrets.existingSecret': '"mine"', 'runners.uploadSecret.existingSecret': '"mine-storage"' } })
  t.same(ofKind(existing, 'Secret'), [], 'existing Secrets: the chart renders none')
  const { container } = deploymentContainer(existing, 'ffkube-api')
  t.equal(container.env!.find((e) => e.name === 'MONGODB_URL')!.valueFrom!.secretKeyRef!.name, 'mine')
})
