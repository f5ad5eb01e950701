import t from 'tap'
import { eventually } from '../harness/eventually.js'
import { randomUUID } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import {
  ApiextensionsV1Api,
  CustomObjectsApi,
  loadYaml,
  PatchStrategy,
  setHeaderOptions,
  Watch,
  type V1CustomResourceDefinition,
} from '@kubernetes/client-node'
import { startKube } from '../harness/kube.js'

const group = 'ffkube.io'
const version = 'v1alpha1'
const plural = 'mediacommands'

t.test('applies the CRD, then creates, watches and patches the status of a MediaCommand', async (t) => {
  const kube = await startKube(t)
  const kc = kube.kubeConfig()
  const crd = loadYaml<V1CustomResourceDefinition>(await readFile('crds/mediacommands.ffkube.io.yaml', 'utf8'))
  const extensions = kc.makeApiClient(ApiextensionsV1Api)
  await extensions.createCustomResourceDefinition({ body: crd })

  // The CRD serves only once it is Established.
  await eventually('the CRD Established', async () => {
    const current = await extensions.readCustomResourceDefinition({ name: crd.metadata!.name! })
    return current.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True')
  })

  const objects = kc.makeApiClient(CustomObjectsApi)
  const seen: Array<{ phase: string; status?: { phase?: string } }> = []
  let sawSuccess!: () => void
  const success = new Promise<void>((resolve) => (sawSuccess = resolve))
  // A new CRD's watch cache answers 429 for a moment: a watch is restarted until it holds.
  let watch: AbortController | undefined
  let stopped = false
  const startWatch = async (): Promise<void> => {
    watch = await new Watch(kc).watch(
      `/apis/${group}/${version}/namespaces/default/${plural}`,
      {},
      (phase, obj: { status?: { phase?: string } }) => {
        seen.push({ phase, status: obj.status })
        if (obj.status?.phase === 'SUCCESS') sawSuccess()
      },
      () => {
        if (!stopped) setTimeout(() => startWatch().catch(t.error), 100)
      },
    )
  }
  await startWatch()
  t.teardown(() => {
    stopped = true
    watch?.abort()
  })
  await objects.listNamespacedCustomObject({ group, version, plural, namespace: 'default' })

  // Command ids are UUIDs: lowercase, so a valid CR name as DESIGN.md requires.
  const name = randomUUID()
  const created = await objects.createNamespacedCustomObject({
    group, version, plural, namespace: 'default',
    body: { apiVersion: `${group}/${version}`, kind: 'MediaCommand', metadata: { name }, spec: { commandType: 'FFMPEG_COMMAND', accountId: 'acc_1' } },
  })
  t.equal(created.metadata.name, name)

  await t.rejects(
    objects.createNamespacedCustomObject({
      group, version, plural, namespace: 'default',
      body: { apiVersion: `${group}/${version}`, kind: 'MediaCommand', metadata: { name: 'bad' }, spec: { commandType: 'RM_RF', accountId: 'acc_1' } },
    }),
    { code: 422 },
    'the schema refuses an unknown command type',
  )

  await objects.patchNamespacedCustomObjectStatus(
    { group, version, plural, namespace: 'default', name, body: { status: { phase: 'SUCCESS', progress: 100 } } },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  )
  await success
  t.same(seen[0], { phase: 'ADDED', status: undefined }, 'the watch saw the object created')
  t.ok(seen.some((event) => event.phase === 'MODIFIED' && event.status?.phase === 'SUCCESS'), 'the watch saw the status patch')

  const read = await objects.getNamespacedCustomObject({ group, version, plural, namespace: 'default', name })
  t.equal(read.status.phase, 'SUCCESS')
  t.equal(read.spec.commandType, 'FFMPEG_COMMAND', 'a status patch does not touch the spec')
})
