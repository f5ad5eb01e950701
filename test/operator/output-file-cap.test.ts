/**
 * The file-count cap of a command (CommandLimits.maxOutputFiles) on its way
 * to a Job, against a real kube-apiserver: the CRD accepts it on the
 * MediaCommand, refuses to change it, and the runner's spec gets it back.
 */
import { CustomObjectsApi } from '@kubernetes/client-node'
import t from 'tap'
import { KubernetesExecutor } from '../../api/executors/kubernetes-executor.js'
import { commandSpecFromMediaCommand, type MediaCommand } from '../../contracts/media-command.js'
import { startKube } from '../harness/kube.js'
import { commandSpec } from './fixtures.js'
import { cr, installCrd, newNamespace } from './kube-setup.js'

t.test('a command’s file cap travels on its MediaCommand to the runner’s spec', async (t) => {
  const kube = await startKube(t)
  const kc = kube.kubeConfig()
  await installCrd(kc)
  const namespace = await newNamespace(kc, 'file-cap')
  const objects = kc.makeApiClient(CustomObjectsApi)
  const executor = new KubernetesExecutor({ kubeConfig: kc, namespace, destinationCredentials: async () => null })
  const limits = { maxRunSeconds: 120, vcpuMillis: 1000, memoryMib: 512, maxOutputFiles: 250 }
  const spec = commandSpec({ storageDestination: null, limits })
  await executor.execute(spec)
  const mc = (await objects.getNamespacedCustomObject({ ...cr, namespace, name: spec.commandId })) as MediaCommand
  t.equal(mc.spec.maxOutputFiles, 250, 'the apiserver kept the field')
  t.same(commandSpecFromMediaCommand(mc).limits, limits, 'the runner gets the cap back')
  const change = await objects
    .patchNamespacedCustomObject({ ...cr, namespace, name: spec.commandId, body: [{ op: 'replace', path: '/spec/maxOutputFiles', value: 100000 }] })
    .then(() => null, (error: unknown) => error)
  t.match(String((change as { body?: unknown })?.body ?? change), /immutable/, 'the cap cannot be changed once the command is accepted')
})
