/** Shared steps of the operator's kube tests: the CRD installed, a namespace, an operator, polling. */
import { readFile } from 'node:fs/promises'
import { request } from 'node:https'
import {
  ApiextensionsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  loadAllYaml,
  loadYaml,
  RbacAuthorizationV1Api,
  type V1CustomResourceDefinition,
  type V1PolicyRule,
  type V1Role,
} from '@kubernetes/client-node'
import { pino } from 'pino'
import { MEDIA_COMMAND_GROUP, MEDIA_COMMAND_PLURAL, MEDIA_COMMAND_VERSION, type MediaCommand } from '../../contracts/media-command.js'
import { Operator, type OperatorOptions, type OperatorSettings } from '../../operator/operator.js'
import { eventually } from '../harness/eventually.js'
import type { TestKube } from '../harness/kube.js'
import { jobConfig } from './fixtures.js'

export const cr = { group: MEDIA_COMMAND_GROUP, version: MEDIA_COMMAND_VERSION, plural: MEDIA_COMMAND_PLURAL }


/** Applies crds/ and waits until MediaCommands can be listed (a fresh CRD answers 429 for a moment). */
export async function installCrd(kc: KubeConfig): Promise<void> {
  const crd = loadYaml<V1CustomResourceDefinition>(await readFile('crds/mediacommands.ffkube.io.yaml', 'utf8'))
  const extensions = kc.makeApiClient(ApiextensionsV1Api)
  await extensions.createCustomResourceDefinition({ body: crd })
  await eventually('the CRD to be Established', async () => {
    const current = await extensions.readCustomResourceDefinition({ name: crd.metadata!.name! })
    return current.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True')
  })
  const objects = kc.makeApiClient(CustomObjectsApi)
  await eventually('MediaCommands to be served', () => objects.listNamespacedCustomObject({ ...cr, namespace: 'default' }).then(() => true))
}

let namespaces = 0
export async function newNamespace(kc: KubeConfig, prefix: string): Promise<string> {
  const name = `${prefix}-${++namespaces}`
  await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name } } })
  return name
}

export const testLogger = pino({ level: process.env.LOG_LEVEL ?? 'silent' })

export function settings(namespace: string, overrides: Partial<OperatorSettings> = {}): OperatorSettings {
  return {
    namespace,
    identity: 'operator-a',
    job: jobConfig,
    warmPods: { count: 0, vcpuMillis: 2000, memoryMib: 8192, idleSeconds: 3600 },
    retentionSeconds: 3600,
    imagePullGraceSeconds: 1,
    workers: 4,
    leaseName: 'ffkube-operator',
    leaseDurationSeconds: 15,
    renewDeadlineSeconds: 10,
    retryPeriodSeconds: 2,
    ...overrides,
  }
}

/** A started operator, stopped when the test ends; Lease periods short enough for tests, long enough that a loaded CI machine does not lose the Lease. */
export async function startOperator(
  t: { teardown(fn: () => unknown): void }, kc: KubeConfig, config: OperatorSettings, extra: Partial<OperatorOptions> = {},
): Promise<Operator> {
  const operator = new Operator({
    kubeConfig: kc, config, logger: testLogger.child({ identity: config.identity }),
    leaseTimingMs: { duration: 5000, renewDeadline: 4000, retryPeriod: 300 },
    ...extra,
  })
  let stopped = false
  const stop = operator.stop.bind(operator)
  operator.stop = async () => {
    if (stopped) return
    stopped = true
    await stop()
  }
  t.teardown(() => operator.stop())
  await operator.start()
  return operator
}

export async function getMediaCommand(kc: KubeConfig, namespace: string, name: string): Promise<MediaCommand> {
  return (await kc.makeApiClient(CustomObjectsApi).getNamespacedCustomObject({ ...cr, namespace, name })) as MediaCommand
}

/** The MediaCommand once its status.phase is `phase`. */
export function mediaCommandIn(kc: KubeConfig, namespace: string, name: string, phase: string, timeoutMs = 20_000): Promise<MediaCommand> {
  return eventually(`MediaCommand ${name} to be ${phase}`, async () => {
    const mc = await getMediaCommand(kc, namespace, name)
    return mc.status?.phase === phase ? mc : undefined
  }, timeoutMs)
}

/** GET as a meta.k8s.io Table: what `kubectl get` prints. */
export function getTable(kube: TestKube, path: string): Promise<{ columnDefinitions: Array<{ name: string; priority: number }>; rows: Array<{ cells: unknown[] }> }> {
  return new Promise((resolve, reject) => {
    readFile(kube.caFile).then((ca) => {
      const url = new URL(kube.server + path)
      const req = request({
        host: url.hostname, port: url.port, path: url.pathname + url.search, ca,
        headers: { authorization: `Bearer ${kube.adminToken}`, accept: 'application/json;as=Table;v=v1;g=meta.k8s.io' },
      }, (res) => {
        let body = ''
        res.on('data', (chunk: Buffer) => (body += chunk.toString()))
        res.on('end', () => (res.statusCode === 200 ? resolve(JSON.parse(body)) : reject(new Error(`${res.statusCode}: ${body}`))))
      })
      req.on('error', reject)
      req.end()
    }, reject)
  })
}

/** The operator's Role rules, as operator/rbac.yaml grants them. */
export async function operatorRules(): Promise<V1PolicyRule[]> {
  const [role] = loadAllYaml(await readFile('operator/rbac.yaml', 'utf8')) as V1Role[]
  return role!.rules!
}

/** A KubeConfig whose user is a fresh ServiceAccount of `namespace` holding nothing but `rules` there. */
export async function restrictedKubeConfig(kube: TestKube, kc: KubeConfig, namespace: string, name: string, rules: V1PolicyRule[]): Promise<KubeConfig> {
  const rbac = kc.makeApiClient(RbacAuthorizationV1Api)
  const core = kc.makeApiClient(CoreV1Api)
  await rbac.createNamespacedRole({ namespace, body: { metadata: { name }, rules } })
  await core.createNamespacedServiceAccount({ namespace, body: { metadata: { name } } })
  await rbac.createNamespacedRoleBinding({
    namespace,
    body: {
      metadata: { name },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
      subjects: [{ kind: 'ServiceAccount', name, namespace }],
    },
  })
  const token = await core.createNamespacedServiceAccountToken({ name, namespace, body: { spec: { audiences: [], expirationSeconds: 3600 } } })
  const restricted = new KubeConfig()
  restricted.loadFromOptions({
    clusters: [{ name: 'harness', server: kube.server, caFile: kube.caFile }],
    users: [{ name, token: token.status!.token }],
    contexts: [{ name, cluster: 'harness', user: name, namespace }],
    currentContext: name,
  })
  return restricted
}
