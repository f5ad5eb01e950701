/**
 * Kubernetes mode against a real kube-apiserver: a command with a storage
 * destination gets a per-command Secret owned by its MediaCommand, and the
 * credentials are in that Secret only, never in the CR.
 */
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node'
import t from 'tap'
import type { StorageDestinationSpec } from '../../contracts/command-spec.js'
import type { MediaCommand } from '../../contracts/media-command.js'
import { KubernetesExecutor } from '../../api/executors/kubernetes-executor.js'
import { startKube } from '../harness/kube.js'
import { commandSpec } from '../operator/fixtures.js'
import { cr, installCrd, newNamespace } from '../operator/kube-setup.js'

const SECRET = 'kube-secret-access-key-0123456789abcdef'

t.test('the Kubernetes executor hands destination credentials over in an owned Secret', async (t) => {
  const kube = await startKube(t)
  const kc = kube.kubeConfig()
  await installCrd(kc)
  const namespace = await newNamespace(kc, 'destinations')
  const core = kc.makeApiClient(CoreV1Api)
  const objects = kc.makeApiClient(CustomObjectsApi)
  const opened: string[] = []
  const executor = new KubernetesExecutor({
    kubeConfig: kc,
    namespace,
    destinationCredentials: async (spec) => {
      opened.push(spec.commandId)
      return spec.accountId === 'acc_gone' ? null : { accessKeyId: 'AKIAKUBE', secretAccessKey: SECRET }
    },
  })
  const destination: StorageDestinationSpec = {
    id: `sd_${'e'.repeat(32)}`, endpointUrl: 'https://s3.example.com', region: 'auto', bucket: 'media-out', prefix: 'p', pathStyle: false, publicBaseUrl: null,
  }

  t.test('creates the Secret ffkube-<command_id>-destination owned by the MediaCommand, idempotently', async (t) => {
    const spec = commandSpec({ storageDestinationId: destination.id, storageDestination: destination })
    await executor.execute(spec)
    await executor.execute(spec)
    const mc = (await objects.getNamespacedCustomObject({ ...cr, namespace, name: spec.commandId })) as MediaCommand
    t.same(mc.spec.storageDestination, destination)
    t.notOk(JSON.stringify(mc).includes(SECRET), 'the CR holds no secret')
    const secret = await core.readNamespacedSecret({ name: `ffkube-${spec.commandId}-destination`, namespace })
    t.same(JSON.parse(Buffer.from(secret.data!['credentials.json']!, 'base64').toString()), { accessKeyId: 'AKIAKUBE', secretAccessKey: SECRET })
    t.match(secret.metadata!.ownerReferences, [{ apiVersion: 'ffkube.io/v1alpha1', kind: 'MediaCommand', name: spec.commandId, uid: mc.metadata.uid }])
    t.equal(secret.metadata!.ownerReferences!.length, 1)
  })

  t.test('credentials that cannot be opened still get a Secret, so the upload fails instead of the pod hanging', async (t) => {
    const spec = commandSpec({ accountId: 'acc_gone', storageDestinationId: destination.id, storageDestination: destination })
    await executor.execute(spec)
    const secret = await core.readNamespacedSecret({ name: `ffkube-${spec.commandId}-destination`, namespace })
    t.equal(Buffer.from(secret.data!['credentials.json']!, 'base64').toString(), '{}')
  })

  t.test('a command without a destination gets no Secret and opens no credentials', async (t) => {
    const spec = commandSpec()
    const before = opened.length
    await executor.execute(spec)
    t.equal(opened.length, before)
    await t.rejects(core.readNamespacedSecret({ name: `ffkube-${spec.commandId}-destination`, namespace }), { code: 404 })
  })
})
